"""A key's states (docs/product.md §2, §10, §16), derived from its times and never stored: the
names, and the conditions that find the keys in each (ApiKeyQuerySet in models.py applies them)."""

from datetime import datetime, timedelta

from django.db import models
from django.db.models import Q

from apps.common.validation import InvalidInput


class ApiKeyState(models.TextChoices):
    PENDING = "pending", "Waiting for approval"
    DENIED = "denied", "Denied"
    ACTIVE = "active", "Active"
    # Its holder is suspended by the workspace's identity provider (docs/product.md §16).
    SUSPENDED = "suspended", "Suspended (identity provider)"
    EXPIRED = "expired", "Expired"
    REVOKED = "revoked", "Revoked"


# A key that waits: asked for, neither approved nor denied (docs/product.md §10).
WAITING = Q(approval_requested_at__isnull=False, approved_at__isnull=True, denied_at__isnull=True)


# The list filter for current_condition's keys, beside the states (list_keys' `state`).
CURRENT = "current"


def current_condition(now: datetime) -> Q:
    """Keys that work or wait for approval: the ones a list opens on, the ones to revoke."""
    unexpired = Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    return unexpired & Q(revoked_at__isnull=True, denied_at__isnull=True)


def state_condition(state: str, now: datetime) -> Q:
    """Keys in a state at `now`, from revoked_at, denied_at, expires_at and the approval."""
    if state == CURRENT:
        return current_condition(now)
    if state == ApiKeyState.REVOKED:
        return Q(revoked_at__isnull=False)
    if state == ApiKeyState.DENIED:
        return Q(revoked_at__isnull=True, denied_at__isnull=False)
    live = Q(revoked_at__isnull=True, denied_at__isnull=True)
    if state == ApiKeyState.EXPIRED:
        return live & Q(expires_at__lte=now)
    if state == ApiKeyState.SUSPENDED:
        return current_condition(now) & Q(suspended_at__isnull=False)
    unsuspended = current_condition(now) & Q(suspended_at__isnull=True)
    if state == ApiKeyState.PENDING:
        return unsuspended & WAITING
    if state == ApiKeyState.ACTIVE:
        return unsuspended & ~WAITING
    raise ValueError(f"Unknown key state {state!r}.")


def idle_condition(days: int, now: datetime) -> Q:
    """Keys idle `days` or more at `now`: last used that long ago, or never used and created
    that long ago (docs/product.md §13)."""
    cutoff = now - timedelta(days=days)
    return Q(last_used_at__lte=cutoff) | Q(last_used_at__isnull=True, created_at__lte=cutoff)


def holder_condition(holder: str) -> Q:
    """Keys of a holder named by e-mail address, or `service:ID` for a service account."""
    if holder.startswith("service:"):
        account_id = holder.removeprefix("service:")
        if not (account_id.isascii() and account_id.isdigit()):
            raise InvalidInput("holder", "holder must be an e-mail address or service:ID.")
        return Q(user__service_account__id=int(account_id))
    return Q(user__email__iexact=holder)
