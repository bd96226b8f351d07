"""What the identity provider's word does to the team (docs/product.md §16): a person made by
SCIM joins as an admin, `active: false` suspends, `active: true` restores, DELETE removes as
Remove does. Each write is one transaction with its audit events, the identity provider named
as their actor."""

from dataclasses import dataclass
from typing import Any

from allauth.account.models import EmailAddress
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone
from scim2_models import User

from apps.accounts.models import User as Account
from apps.audit.services import Actor, audit_record
from apps.common.validation import InvalidInput
from apps.workspaces.audit_actions import TEAM_MEMBER_ADDED
from apps.workspaces.models import Membership, Workspace
from apps.workspaces.services import team_remove, team_restore, team_suspend

from .notices import tell_owners_of_suspension, welcome_provisioned
from .users import email_of, full_name_of, profile_of


class ScimRefusal(Exception):
    """A write the SCIM protocol refuses: `status` and `scim_type` (RFC 7644 §3.12)."""

    def __init__(self, status: int, scim_type: str | None, detail: str) -> None:
        super().__init__(detail)
        self.status, self.scim_type, self.detail = status, scim_type, detail


@dataclass(frozen=True)
class Outcome:
    """What a write did, in a sentence for the settings page's list of recent requests."""

    membership: Membership
    summary: str


def _clean_email(user: "User[Any]") -> str:
    email = email_of(user)
    if email is None:
        raise ScimRefusal(
            400,
            "invalidValue",
            "Gatehouse needs an e-mail address for each person: send emails, or an address "
            "as userName.",
        )
    try:
        validate_email(email)
    except ValidationError:
        raise ScimRefusal(400, "invalidValue", f"{email!r} is not an e-mail address.") from None
    return email.lower()


def _check_unique(workspace: Workspace, user: "User[Any]", *, besides: int = 0) -> None:
    team = Membership.objects.filter(workspace=workspace).exclude(pk=besides)
    name = user.user_name or ""
    if team.filter(scim_user_name__iexact=name).exists() or (
        team.filter(scim_user_name="", user__email__iexact=name).exists()
    ):
        raise ScimRefusal(409, "uniqueness", f"userName {name!r} is already on this team.")
    if user.external_id and team.filter(external_id=user.external_id).exists():
        raise ScimRefusal(
            409, "uniqueness", f"externalId {user.external_id!r} is already on this team."
        )


def user_provision(*, workspace: Workspace, user: "User[Any]", actor: Actor) -> Outcome:
    """POST /Users: the person joins the team as an admin (owners are made in the dashboard),
    with a new account unless their address has one; they are told by e-mail how to sign in."""
    email = _clean_email(user)
    with transaction.atomic():
        _check_unique(workspace, user)
        account = Account.objects.filter(email__iexact=email).first()
        if account is not None and account.is_service_account:
            raise ScimRefusal(409, "uniqueness", f"{email} is a service account's address.")
        if (
            account is not None
            and Membership.objects.filter(workspace=workspace, user=account).exists()
        ):
            raise ScimRefusal(
                409,
                "uniqueness",
                f"{email} is already in this workspace (as a community member or teammate): "
                "match them by filtering on userName or emails.",
            )
        if account is not None:
            # An account of its own elsewhere joins only by accepting an invitation as itself:
            # a provider never attaches it (docs/product.md §16).
            raise ScimRefusal(
                409,
                "uniqueness",
                f"{email} already has a Gatehouse account: invite them from the Team page; once "
                "they accept, your provider finds them by filtering on userName.",
            )
        account = Account.objects.create_user(email, None, full_name=full_name_of(user)[:150])
        membership = Membership.objects.create(
            workspace=workspace,
            user=account,
            role=Membership.Role.ADMIN,
            source=Membership.Source.SCIM,
            external_id=user.external_id or "",
            scim_user_name=user.user_name or "",
            scim_profile=profile_of(user),
            updated_at=timezone.now(),
        )
        audit_record(
            workspace=workspace,
            action=TEAM_MEMBER_ADDED,
            actor=actor,
            subject=email,
            data={"email": email, "role": Membership.Role.ADMIN, "source": "scim"},
        )
        summary = f"Added {email} as an admin"
        if user.active is False:
            membership, _ = team_suspend(membership=membership, actor=actor)
            summary += ", suspended"
        else:
            welcome_provisioned(membership)
    return Outcome(membership, summary)


def user_write(*, membership: Membership, user: "User[Any]", actor: Actor) -> Outcome:
    """PUT, or PATCH once applied: the record replaces the kept one; `active` suspends or
    restores. The address of an account that is also elsewhere is its holder's to change."""
    email = _clean_email(user)
    account = membership.user
    changes: list[str] = []
    with transaction.atomic():
        _check_unique(membership.workspace, user, besides=membership.pk)
        current = Membership.objects.select_for_update(no_key=True).get(pk=membership.pk)
        if email != account.email:
            _change_address(current, account, email)
            changes.append(f"address {email}")
        full_name = full_name_of(user)[:150]
        if full_name != account.full_name:
            Account.objects.filter(pk=account.pk).update(full_name=full_name)
            account.full_name = full_name
        current.external_id = user.external_id or ""
        current.scim_user_name = user.user_name or ""
        current.scim_profile = profile_of(user)
        current.updated_at = timezone.now()
        try:
            with transaction.atomic():
                current.save(
                    update_fields=["external_id", "scim_user_name", "scim_profile", "updated_at"]
                )
        except IntegrityError:  # a concurrent write took the userName or externalId
            raise ScimRefusal(409, "uniqueness", "userName or externalId is taken.") from None
        current, changes = _activity(current, user, actor, changes)
    summary = f"Updated {account.email}" + (f": {', '.join(changes)}" if changes else "")
    return Outcome(current, summary)


def _activity(
    current: Membership, user: "User[Any]", actor: Actor, changes: list[str]
) -> tuple[Membership, list[str]]:
    if user.active is False and current.suspended_at is None:
        try:
            current, keys = team_suspend(membership=current, actor=actor)
        except InvalidInput as refused:
            raise ScimRefusal(400, "mutability", refused.message) from None
        tell_owners_of_suspension(current)
        changes.append(f"suspended, {keys} key{'s' * (keys != 1)} paused")
    elif user.active is not False and current.suspended_at is not None:
        current, keys = team_restore(membership=current, actor=actor)
        changes.append(f"restored, {keys} key{'s' * (keys != 1)} working again")
    return current, changes


def _change_address(membership: Membership, account: Account, email: str) -> None:
    """Only an address the provider gave: of an account it made, an admin nowhere else. An
    owner's, or an account's of its own, is its holder's to change (a verified address is the
    way into the account)."""
    elsewhere = Membership.objects.filter(user=account).exclude(pk=membership.pk).exists()
    if (
        elsewhere
        or membership.source != Membership.Source.SCIM
        or membership.role == Membership.Role.OWNER
    ):
        raise ScimRefusal(
            400,
            "mutability",
            f"{account.email} is not an account your provider made (or is an owner's, or is in "
            "other workspaces too): only its holder changes its address, in Gatehouse.",
        )
    if Account.objects.filter(email__iexact=email).exclude(pk=account.pk).exists():
        raise ScimRefusal(409, "uniqueness", f"{email} is another account's address.")
    Account.objects.filter(pk=account.pk).update(email=email)
    EmailAddress.objects.filter(user=account).delete()
    EmailAddress.objects.create(user=account, email=email, primary=True, verified=True)
    account.email = email


def user_remove(*, membership: Membership, actor: Actor) -> Outcome:
    """DELETE /Users/{id}: as Remove on the Team page, every key not handed over revoked."""
    email = membership.user.email
    try:
        team_remove(membership=membership, actor=actor)
    except InvalidInput as refused:
        raise ScimRefusal(
            400,
            "mutability",
            f"{refused.message} {email} is the workspace's last active owner.",
        ) from None
    return Outcome(membership, f"Removed {email}")
