"""A key's states (docs/product.md §2, §10), derived from its times and never stored: the
names, and the conditions that find the keys in each (ApiKeyQuerySet in models.py applies them)."""

from datetime import datetime

from django.db import models
from django.db.models import Q


class ApiKeyState(models.TextChoices):
    PENDING = "pending", "Waiting for approval"
    DENIED = "denied", "Denied"
    ACTIVE = "active", "Active"
    EXPIRED = "expired", "Expired"
    REVOKED = "revoked", "Revoked"


# A key that waits: asked for, neither approved nor denied (docs/product.md §10).
WAITING = Q(approval_requested_at__isnull=False, approved_at__isnull=True, denied_at__isnull=True)


def current_condition(now: datetime) -> Q:
    """Keys that work or wait for approval: the ones a list opens on, the ones to revoke."""
    unexpired = Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    return unexpired & Q(revoked_at__isnull=True, denied_at__isnull=True)


def state_condition(state: str, now: datetime) -> Q:
    """Keys in a state at `now`, from revoked_at, denied_at, expires_at and the approval."""
    if state == ApiKeyState.REVOKED:
        return Q(revoked_at__isnull=False)
    if state == ApiKeyState.DENIED:
        return Q(revoked_at__isnull=True, denied_at__isnull=False)
    live = Q(revoked_at__isnull=True, denied_at__isnull=True)
    if state == ApiKeyState.EXPIRED:
        return live & Q(expires_at__lte=now)
    if state == ApiKeyState.PENDING:
        return current_condition(now) & WAITING
    if state == ApiKeyState.ACTIVE:
        return current_condition(now) & ~WAITING
    raise ValueError(f"Unknown key state {state!r}.")
