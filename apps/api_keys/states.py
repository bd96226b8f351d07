"""A key's states (docs/product.md §2, §10), derived from its times and never stored: the
names, and the queries that find the keys in each."""

from datetime import datetime
from typing import TYPE_CHECKING

from django.db import models
from django.db.models import Q
from django.utils import timezone

if TYPE_CHECKING:
    from .models import ApiKey  # noqa: F401 - named in the QuerySet["ApiKey"] string below


class ApiKeyState(models.TextChoices):
    PENDING = "pending", "Waiting for approval"
    DENIED = "denied", "Denied"
    ACTIVE = "active", "Active"
    EXPIRED = "expired", "Expired"
    REVOKED = "revoked", "Revoked"


# A key that waits: asked for, neither approved nor denied (docs/product.md §10).
WAITING = Q(approval_requested_at__isnull=False, approved_at__isnull=True, denied_at__isnull=True)


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def in_state(self, state: str, now: datetime | None = None) -> "ApiKeyQuerySet":
        """Keys in a state, derived from revoked_at and expires_at at `now`."""
        now = now or timezone.now()
        if state == ApiKeyState.REVOKED:
            return self.filter(revoked_at__isnull=False)
        if state == ApiKeyState.DENIED:
            return self.filter(revoked_at__isnull=True, denied_at__isnull=False)
        live = self.filter(revoked_at__isnull=True, denied_at__isnull=True)
        unexpired = Q(expires_at__isnull=True) | Q(expires_at__gt=now)
        if state == ApiKeyState.EXPIRED:
            return live.filter(expires_at__lte=now)
        if state == ApiKeyState.PENDING:
            return live.filter(WAITING, unexpired)
        if state == ApiKeyState.ACTIVE:
            return live.filter(unexpired).exclude(WAITING)
        raise ValueError(f"Unknown key state {state!r}.")

    def current(self, now: datetime | None = None) -> "ApiKeyQuerySet":
        """Keys that work or wait for approval: the ones a list opens on, the ones to revoke."""
        now = now or timezone.now()
        return self.filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now),
            revoked_at__isnull=True,
            denied_at__isnull=True,
        )
