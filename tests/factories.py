"""The cast of the tests: users, workspaces with their owners, and keys with their secrets."""

from datetime import timedelta

import factory
from allauth.account.models import EmailAddress
from django.utils import timezone

from apps.accounts.models import User
from apps.api.scopes import ALL_SCOPES
from apps.api_keys.models import ApiKey
from apps.api_keys.restrictions import Restrictions
from apps.api_keys.services import CreatedApiKey, api_key_create
from apps.common.quota_periods import Quota
from apps.workspaces.models import Membership, Workspace

PASSWORD = "a-long-test-password-42"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    email = factory.Sequence(lambda n: f"user{n}@example.com")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):  # noqa: N805
        if create:
            obj.save()

    @factory.post_generation
    def verified(obj, create, extracted, **kwargs):  # noqa: N805
        """Users have a verified primary address unless made with `verified=False`."""
        if create and extracted is not False:
            EmailAddress.objects.get_or_create(
                user=obj, email=obj.email, defaults={"primary": True, "verified": True}
            )


class WorkspaceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Workspace

    name = factory.Sequence(lambda n: f"Workspace {n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    workspace = factory.SubFactory(WorkspaceFactory)
    user = factory.SubFactory(UserFactory)
    role = Membership.Role.OWNER


def owner_of(workspace: Workspace | None = None, **user_fields) -> User:
    """A user who owns `workspace` (a new one when not given)."""
    membership = MembershipFactory(
        workspace=workspace or WorkspaceFactory(),
        user=UserFactory(**user_fields),
        role=Membership.Role.OWNER,
    )
    return membership.user


def make_key(
    *,
    user: User | None = None,
    workspace: Workspace | None = None,
    scopes=ALL_SCOPES,
    expires_in: timedelta | None = timedelta(days=365),
    kind: str = ApiKey.Kind.WORKSPACE,
    name: str = "Test key",
    tag: str = ApiKey.Tag.NONE,
    restrictions: Restrictions | None = None,
    quota: Quota | None = None,
) -> CreatedApiKey:
    """A key made by the real service, so tests use real secrets and real hashes."""
    if user is None:
        user = owner_of(workspace)
    if workspace is None:
        workspace = user.memberships.first().workspace
    return api_key_create(
        workspace=workspace,
        user=user,
        name=name,
        scopes=list(scopes),
        expires_at=(timezone.now() + expires_in)
        if expires_in and tag not in ("cli", "mcp")
        else None,
        kind=kind,
        tag=tag,
        restrictions=restrictions,
        quota=quota,
    )


def member_of(community, **user_fields) -> User:
    """A community member (role member in the community's workspace)."""
    from apps.communities.models import CommunityMembership

    user = UserFactory(**user_fields)
    Membership.objects.create(workspace=community.workspace, user=user, role=Membership.Role.MEMBER)
    CommunityMembership.objects.create(community=community, user=user)
    return user


def make_community(workspace: Workspace | None = None, name: str = "Makers"):
    from apps.communities.models import Community

    return Community.objects.create(workspace=workspace or WorkspaceFactory(), name=name)
