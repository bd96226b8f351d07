"""Writes on communities, their members and posts."""

from typing import Any

from django.core.mail import send_mail
from django.db import transaction

from apps.accounts.models import User
from apps.accounts.services import clean_email, set_password_link
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
        user = User.objects.filter(email=email).first()
        is_new = user is None
        if is_new:
            user = User.objects.create_user(email=email, password=None)
        Membership.objects.get_or_create(
            workspace=community.workspace, user=user, defaults={"role": Membership.Role.MEMBER}
        )
        CommunityMembership.objects.get_or_create(community=community, user=user)
        if is_new:
            link = set_password_link(user, base_url)
            transaction.on_commit(
                lambda: send_mail(
                    f"You have been added to {community.name}",
                    f"You are now a member of {community.name} in {community.workspace.name}.\n\n"
                    f"Choose your password to sign in:\n{link}\n",
                    None,
                    [email],
                )
            )
    return user


def community_member_remove(*, community: Community, user: User) -> None:
    """Take a member out of a community; their keys lose access to it on the next request."""
    CommunityMembership.objects.filter(community=community, user=user).delete()


def post_create(*, community: Community, author: User, title: Any, body: Any) -> Post:
    return Post.objects.create(
        community=community,
        author=author,
        title=clean_text(title, "title", max_length=200),
        body=clean_long_text(body, "body", max_length=POST_BODY_MAX_LENGTH),
    )
