"""Writes on communities, their members and posts."""

from typing import Any

from django.db import transaction

from apps.accounts.models import User
from apps.accounts.services import clean_email, invitation_send_on_commit, user_get_or_invite
from apps.api_keys.models import ApiKey
from apps.api_keys.services import api_key_revoke
from apps.audit.models import Action
from apps.audit.services import Actor, audit_record
from apps.common.validation import clean_long_text, clean_text
from apps.workspaces.models import Membership, Workspace

from .models import Community, CommunityMembership, Post

POST_BODY_MAX_LENGTH = 5_000


def community_create(*, workspace: Workspace, name: Any) -> Community:
    return Community.objects.create(
        workspace=workspace, name=clean_text(name, "name", max_length=100)
    )


def community_member_add(*, community: Community, email: str, base_url: str) -> User:
    """Add a person to a community by e-mail, creating their account when new.

    A new person gets an e-mail with a link to set their password; they join the workspace as a
    member (an owner or admin keeps their role). Adding someone twice changes nothing.
    """
    email = clean_email(email)
    with transaction.atomic():
        user, is_new = user_get_or_invite(email)
        Membership.objects.get_or_create(
            workspace=community.workspace, user=user, defaults={"role": Membership.Role.MEMBER}
        )
        CommunityMembership.objects.get_or_create(community=community, user=user)
        if is_new:
            invitation_send_on_commit(
                user,
                subject=f"You have been added to {community.name}",
                intro=f"You are now a member of {community.name} in {community.workspace.name}.",
                base_url=base_url,
            )
    return user


def community_member_remove(*, community: Community, user: User, actor: Actor) -> int:
    """Take a member out of a community; their keys lose access to it on the next request.

    Out of their last community of the workspace, a community member leaves the workspace too:
    their member keys are revoked (audited) and the portal no longer lets them in (PRODUCT.md
    §2). Owners and admins keep their place and their workspace keys. Returns how many keys
    were revoked.
    """
    workspace = community.workspace
    with transaction.atomic():
        removed, _ = CommunityMembership.objects.filter(community=community, user=user).delete()
        if not removed:
            return 0
        audit_record(
            workspace=workspace,
            action=Action.COMMUNITY_MEMBER_REMOVED,
            actor=actor,
            subject=user.email,
            data={"email": user.email, "community": community.name},
        )
        if CommunityMembership.objects.filter(community__workspace=workspace, user=user).exists():
            return 0
        keys = ApiKey.objects.filter(
            workspace=workspace, user=user, kind=ApiKey.Kind.MEMBER, revoked_at__isnull=True
        ).select_related("workspace", "user")
        revoked = 0
        for key in keys:
            api_key_revoke(key=key, actor=actor)
            revoked += 1
        Membership.objects.filter(
            workspace=workspace, user=user, role=Membership.Role.MEMBER
        ).delete()
    return revoked


def post_create(*, community: Community, author: User, title: Any, body: Any) -> Post:
    return Post.objects.create(
        community=community,
        author=author,
        title=clean_text(title, "title", max_length=200),
        body=clean_long_text(body, "body", max_length=POST_BODY_MAX_LENGTH),
    )
