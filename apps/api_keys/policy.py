"""What a key may be, and who may hold one: its scopes, its lifetime under the workspace's key
policy, its description, its holder. Validators that the services, forms, commands and models
share."""

from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.accounts.models import User
from apps.api.scopes import EVERY_SCOPE, KEY_SCOPES, MEMBER_SCOPES
from apps.common.validation import InvalidInput, clean_long_text
from apps.common.wording import pluralize
from apps.workspaces.choices import KeyApproval
from apps.workspaces.holders import place_problem
from apps.workspaces.models import Membership, Workspace

DEFAULT_LIFETIME = timedelta(days=365)
MAX_LIFETIME = timedelta(days=365)
CLI_LIFETIME = timedelta(days=90)
MCP_LIFETIME = timedelta(hours=1)  # a connected app's key: renewed by its refresh token
EXPIRY_DAY_CHOICES = (7, 30, 60, 90, 180, 365)


def key_holder_problem(user: User, workspace: Workspace, kind: str) -> str | None:
    """Why `user` may not (or no longer) hold a key of `kind` in `workspace`, or None: the one
    rule (apps/workspaces/holders.py), checked by every path that mints or approves a key.

    Inside a transaction the membership row is locked until it ends, so a removal from the team
    (which locks the same row, then revokes the holder's keys) either comes first and is seen
    here, or waits and then revokes the key this transaction mints."""
    memberships = Membership.objects.select_related("workspace").filter(
        user=user, workspace=workspace
    )
    if transaction.get_connection().in_atomic_block:
        memberships = memberships.select_for_update(of=("self",), no_key=True)
    # `kind` is an ApiKey.Kind value, spelled out: the model imports this module.
    return place_problem(user, workspace, memberships.first(), staff=kind != "member")


def clean_scopes(value: Any, *, kind: str = "workspace", field: str = "scopes") -> list[str]:
    """A non-empty set of known scopes, sorted; member keys may hold community scopes only."""
    if not isinstance(value, (list, tuple, set, frozenset)) or not all(
        isinstance(s, str) for s in value
    ):
        raise InvalidInput(field, "Scopes must be a list of scope names.")
    # `kind` is an ApiKey.Kind value, spelled out: the model imports this module.
    allowed = MEMBER_SCOPES if kind == "member" else EVERY_SCOPE
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise InvalidInput(
            field,
            f"Unknown or not allowed scope {unknown[0]!r}; choose from {', '.join(allowed)}.",
        )
    if not value:
        raise InvalidInput(field, "Choose at least one permission.")
    return sorted(set(value))


def key_policy_problem(
    workspace: Workspace,
    expires_at: datetime | None,
    *,
    now: datetime,
    created_at: datetime | None = None,
) -> str | None:
    """Why a key with this expiry is outside the workspace's key policy, or None.

    `created_at` (default `now`) is when the key's lifetime starts; a day of slack lets a
    custom date mean the end of that day.
    """
    start = created_at or now
    longest = workspace.key_max_lifetime_days
    if expires_at is None:
        if not workspace.key_allow_no_expiry:
            return (
                "This workspace's key policy requires an expiry: "
                f"choose one of at most {longest} day{pluralize(longest)}."
            )
        return None
    if expires_at > start + timedelta(days=longest + 1):
        return (
            f"This workspace's key policy allows keys of at most {longest} day{pluralize(longest)}."
        )
    return None


def clean_expires_at(
    value: datetime | None, *, now: datetime, field: str = "expires_at"
) -> datetime | None:
    """An expiry in the future and no more than 365 days ahead, or None for no expiry."""
    if value is None:
        return None
    if timezone.is_naive(value):
        raise InvalidInput(field, "The expiry must carry a time zone.")
    if value <= now:
        raise InvalidInput(field, "The expiry must be in the future.")
    # One day of slack lets a "date 365 days from today" mean the end of that day.
    if value > now + MAX_LIFETIME + timedelta(days=1):
        raise InvalidInput(field, "The expiry can be at most 365 days ahead.")
    return value


def expiry_in_days(days: int, *, now: datetime | None = None) -> datetime:
    return (now or timezone.now()) + timedelta(days=days)


DESCRIPTION_MAX_LENGTH = 500


def clean_description(value: Any) -> str:
    """A key's optional description: up to 500 characters, newlines allowed."""
    return clean_long_text(
        value or "", "description", max_length=DESCRIPTION_MAX_LENGTH, required=False
    )


def scope_needs_approval(scope: str) -> bool:
    """Whether `scope` makes a key wait under the `write` policy: it changes things or keys."""
    return scope.endswith(":write") or scope in KEY_SCOPES


def approval_covers(policy: str, role: str | None, scopes: Any) -> bool:
    """Whether a new key of a holder with `role` and these `scopes` waits for an owner under
    the workspace's approval `policy` (docs/product.md §10). Owners' own keys never wait."""
    if role == Membership.Role.OWNER or policy == KeyApproval.OFF:
        return False
    if policy == KeyApproval.ALL:
        return True
    return any(scope_needs_approval(scope) for scope in scopes)


def scopes_without_approval(policy: str, role: str | None, scopes: Any) -> list[str]:
    """The part of `scopes` a holder with `role` may get at once, without an owner's approval:
    what the CLI login and an app's Connect offer (they never make a key wait)."""
    if role == Membership.Role.OWNER or policy == KeyApproval.OFF:
        return list(scopes)
    if policy == KeyApproval.ALL:
        return []
    return [scope for scope in scopes if not scope_needs_approval(scope)]


def approval_note(policy: str, role: str | None) -> str | None:
    """What the CLI login's and Connect's pages tell a holder whose choices the policy limits,
    or None when it does not."""
    if role == Membership.Role.OWNER or policy == KeyApproval.OFF:
        return None
    if policy == KeyApproval.ALL:
        return (
            "This workspace asks an owner to approve every key of admins and members, and a "
            "sign-in here cannot wait for one: create a key on the API keys page instead."
        )
    return (
        "This workspace asks an owner to approve keys that can change things, so a sign-in "
        "here offers read access only. For write access, create a key on the API keys page "
        "and an owner will be asked to approve it."
    )


def create_approval_note(policy: str, role: str | None) -> str | None:
    """What the create form tells a holder whose new keys the approval policy covers."""
    if role == Membership.Role.OWNER or policy == KeyApproval.OFF:
        return None
    if policy == KeyApproval.ALL:
        return (
            "In this workspace every new key waits for an owner's approval: you get its "
            "secret at once, and it works once an owner approves it."
        )
    return (
        "In this workspace a key with any Write permission (or any access to API keys) "
        "waits for an owner's approval: you get its secret at once, and it works once an "
        "owner approves it. Keys that only read work at once."
    )
