"""Writes on communities, their members and posts."""

from typing import Any

from django.db import transaction

from apps.accounts.models import User
from apps.audit.services import Actor, audit_record
from apps.common.validation import clean_long_text, clean_text
from apps.workspaces.models import Membership, Workspace
from apps.workspaces.signals import place_removed, revoke_keys_of_removed

from .audit_actions import COMMUNITY_MEMBER_REMOVED
from .models import Community, CommunityMembership, Post

POST_BODY_MAX_LENGTH = 5_000


def community_create(*, workspace: Workspace, name: Any) -> Community:
    return Community.objects.create(
        workspace=workspace, name=clean_text(name, "name", max_length=100)
    )


def community_member_remove(*, community: Community, user: User, actor: Actor) -> int:
    """Take a member out of a community; their keys lose access to it on the next request.

    Out of their last community of the workspace, a community member leaves the workspace too:
    their member keys are revoked (audited) and the portal no longer lets them in (docs/product.md
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
            action=COMMUNITY_MEMBER_REMOVED,
            actor=actor,
            subject=user.email,
            data={"email": user.email, "community": community.name},
        )
        place_removed.send(sender=Community, workspace=workspace, user=user, actor=actor)
        if CommunityMembership.objects.filter(community__workspace=workspace, user=user).exists():
            return 0
        revoked = revoke_keys_of_removed(
            workspace=workspace, user=user, actor=actor, member_keys_only=True
        )
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
