"""Invitations: the only way into a workspace's team or one of its communities."""

import hashlib
import hmac
import secrets
from datetime import UTC, timedelta
from typing import TYPE_CHECKING, Any

from allauth.account.models import EmailAddress
from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import User
from apps.accounts.services import clean_email
from apps.audit.services import Actor, audit_record
from apps.common.dates import moment_text
from apps.common.validation import InvalidInput
from apps.workspaces.models import Membership, Workspace
from apps.workspaces.selectors import STAFF_ROLES

from .audit_actions import INVITATION_ACCEPTED, INVITATION_SENT, INVITATION_WITHDRAWN
from .models import Invitation

if TYPE_CHECKING:
    # Communities stand above invitations (their pages invite people); invitations reach a
    # community only through the relations of the invitation's own foreign key.
    from apps.communities.models import Community

INVITATION_LIFETIME = timedelta(days=7)


def _token_hash(token: str) -> str:
    return hmac.new(settings.SECRET_KEY.encode(), token.encode(), hashlib.sha256).hexdigest()


def invitation_link(token: str, base_url: str) -> str:
    return base_url.rstrip("/") + reverse("invitations:open", kwargs={"token": token})


def invitation_by_token(token: str) -> Invitation | None:
    """The invitation a link's token opens, whatever its state; None for an unknown token."""
    if not token or len(token) > 100:
        return None
    return (
        Invitation.objects.select_related("workspace", "community", "invited_by")
        .filter(token_hash=_token_hash(token))
        .first()
    )


def _issue_token(invitation: Invitation) -> str:
    token = secrets.token_urlsafe(32)
    now = timezone.now()
    invitation.token_hash = _token_hash(token)
    invitation.sent_at = now
    invitation.expires_at = now + INVITATION_LIFETIME
    return token


def _send_on_commit(invitation: Invitation, token: str, base_url: str) -> str:
    link = invitation_link(token, base_url)
    inviter = invitation.invited_by.email if invitation.invited_by else "Gatehouse"
    subject = f"{inviter} invited you to be {invitation.place}"
    expiry = invitation.expires_at
    expires = moment_text(expiry, UTC)
    body = (
        f"{inviter} invited you to be {invitation.place} on Gatehouse.\n\n"
        f"Accept the invitation (the link works once, until {expires}):\n{link}\n\n"
        "If you did not expect this, ignore this e-mail: nothing happens unless you accept.\n"
    )
    transaction.on_commit(lambda: send_mail(subject, body, None, [invitation.email]))
    return link


def _pending(queryset: QuerySet[Invitation]) -> QuerySet[Invitation]:
    return queryset.filter(
        accepted_at__isnull=True, withdrawn_at__isnull=True, expires_at__gt=timezone.now()
    )


def invitation_create(
    *,
    workspace: Workspace,
    email: str,
    role: str,
    actor: Actor,
    base_url: str,
    community: "Community | None" = None,
) -> tuple[Invitation, str]:
    """Invite `email` to the team (role owner or admin) or to `community` (role member), and
    e-mail them the link once the transaction commits. Returns the invitation and its link."""
    email = clean_email(email)
    if community is not None:
        role = Membership.Role.MEMBER
    elif role not in STAFF_ROLES:
        raise InvalidInput("role", "The role must be owner or admin.")
    with transaction.atomic():
        Workspace.objects.select_for_update(no_key=True).filter(pk=workspace.pk).first()
        if community is not None:
            if community.memberships.filter(user__email=email).exists():
                raise InvalidInput("email", f"{email} is already a member of {community.name}.")
            pending = _pending(Invitation.objects.filter(community=community, email=email))
        else:
            current = Membership.objects.filter(workspace=workspace, user__email=email).first()
            if current is not None and current.role in STAFF_ROLES:
                raise InvalidInput("email", f"{email} is already on the team as {current.role}.")
            pending = _pending(
                Invitation.objects.filter(workspace=workspace, community=None, email=email)
            )
        if pending.exists():
            raise InvalidInput(
                "email", f"{email} already has a pending invitation: re-send it from the list."
            )
        invitation = Invitation(
            workspace=workspace, email=email, role=role, community=community, invited_by=actor.user
        )
        token = _issue_token(invitation)
        invitation.save()
        audit_record(
            workspace=workspace,
            action=INVITATION_SENT,
            actor=actor,
            subject=email,
            data=_audit_data(invitation),
        )
        link = _send_on_commit(invitation, token, base_url)
    return invitation, link


def _audit_data(invitation: Invitation, **extra: Any) -> dict[str, Any]:
    data = {"email": invitation.email, "role": invitation.role}
    if invitation.community is not None:
        data["community"] = invitation.community.name
    return {**data, **extra}


def invitation_resend(*, invitation: Invitation, actor: Actor, base_url: str) -> str:
    """A new link (the old one stops working) with a new expiry, e-mailed again."""
    with transaction.atomic():
        current = Invitation.objects.select_for_update(no_key=True).get(pk=invitation.pk)
        if current.state in (Invitation.State.ACCEPTED, Invitation.State.WITHDRAWN):
            raise InvalidInput("invitation", f"This invitation was {current.state}.")
        current.invited_by = actor.user or current.invited_by
        token = _issue_token(current)
        current.save(update_fields=["token_hash", "sent_at", "expires_at", "invited_by"])
        audit_record(
            workspace=current.workspace,
            action=INVITATION_SENT,
            actor=actor,
            subject=current.email,
            data=_audit_data(current, resent=True),
        )
        return _send_on_commit(current, token, base_url)


def invitation_withdraw(*, invitation: Invitation, actor: Actor) -> None:
    """Cancel a pending (or expired) invitation: its link stops working."""
    with transaction.atomic():
        current = Invitation.objects.select_for_update(no_key=True).get(pk=invitation.pk)
        if current.state in (Invitation.State.ACCEPTED, Invitation.State.WITHDRAWN):
            raise InvalidInput("invitation", f"This invitation was already {current.state}.")
        current.withdrawn_at = timezone.now()
        current.save(update_fields=["withdrawn_at"])
        audit_record(
            workspace=current.workspace,
            action=INVITATION_WITHDRAWN,
            actor=actor,
            subject=current.email,
            data=_audit_data(current),
        )


def invitations_withdraw_for_removed(
    *, workspace: Workspace, user: User, actor: Actor, **_signal: Any
) -> int:
    """Withdraw every pending invitation of a person just removed from `workspace` or one of
    its communities, so an older link cannot bring them back; returns how many were withdrawn.
    Runs inside the removal's transaction (the `place_removed` signal)."""
    addresses = {user.email.lower()} | {
        address.lower()
        for address in EmailAddress.objects.filter(user=user).values_list("email", flat=True)
    }
    withdrawn = 0
    for invitation in pending_invitations_of(workspace, addresses):
        invitation_withdraw(invitation=invitation, actor=actor)
        withdrawn += 1
    return withdrawn


def pending_invitations_of(workspace: Workspace, addresses: set[str]) -> list[Invitation]:
    """The not yet accepted or withdrawn invitations of `workspace` to any of `addresses`."""
    return [
        invitation
        for invitation in Invitation.objects.filter(
            workspace=workspace, accepted_at__isnull=True, withdrawn_at__isnull=True
        )
        if invitation.email.lower() in addresses
    ]


def user_controls_address(user: User, email: str) -> bool:
    """Whether `user` has verified that they receive mail at `email`."""
    return EmailAddress.objects.filter(user=user, email__iexact=email, verified=True).exists()


def invitation_accept(*, invitation: Invitation, user: User, ip: str | None) -> Membership:
    """Give `user` what the invitation offers; only the verified owner of its address may, once,
    before it expires. A member invited to the team is promoted; an owner or admin invited to
    a community keeps their role."""
    with transaction.atomic():
        current = (
            Invitation.objects.select_for_update(of=("self",), no_key=True)
            .select_related("workspace", "community")
            .get(pk=invitation.pk)
        )
        if current.state != Invitation.State.PENDING:
            raise InvalidInput("invitation", f"This invitation was {current.state}.")
        if not user_controls_address(user, current.email):
            raise InvalidInput(
                "invitation",
                f"This invitation is for {current.email}; you are signed in as {user.email}.",
            )
        membership, created = Membership.objects.get_or_create(
            workspace=current.workspace, user=user, defaults={"role": current.role}
        )
        if not created and current.community_id is None and membership.role != current.role:
            if membership.role == Membership.Role.MEMBER or current.role == Membership.Role.OWNER:
                membership.role = current.role
                membership.save(update_fields=["role"])
        if current.community is not None:
            current.community.memberships.get_or_create(user=user)
        current.accepted_at = timezone.now()
        current.accepted_by = user
        current.save(update_fields=["accepted_at", "accepted_by"])
        audit_record(
            workspace=current.workspace,
            action=INVITATION_ACCEPTED,
            actor=Actor.of_user(user, ip),
            subject=current.email,
            data=_audit_data(current),
        )
    return membership


def pending_invitations(
    workspace: Workspace, *, community: "Community | None" = None
) -> QuerySet[Invitation]:
    """Invitations not yet accepted or withdrawn (expired ones included, to be re-sent)."""
    return (
        Invitation.objects.filter(
            workspace=workspace,
            community=community,
            accepted_at__isnull=True,
            withdrawn_at__isnull=True,
        )
        .select_related("invited_by", "community")
        .order_by("email")
    )
