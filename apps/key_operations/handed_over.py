"""Where a key went when an owner handed it over to a service account (docs/product.md §12):
the service account's new key, and until when the old secret worked as that key. The hand-over
itself lives in apps/service_accounts, a layer above; it records `key.handed_over` on the new
key, naming the old one, and this reads that event back for the old key's page and record."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from apps.api.http import iso_time
from apps.api_keys.models import ApiKey
from apps.audit.models import AuditEvent

KEY_HANDED_OVER_ACTION = "key.handed_over"


@dataclass(frozen=True)
class HandOver:
    key_id: int  # the service account's new key
    hint: str
    account: str  # the service account's name
    at: datetime
    granted_until: datetime | None  # the grace the owner chose at the hand-over
    stops_at: datetime | None  # when the old secret stopped (or stops) working as the new key

    @property
    def grace(self) -> bool:
        """Whether the old secret was given a while (not stopped at once)."""
        return self.granted_until is not None and self.granted_until > self.at + timedelta(
            seconds=1
        )

    @property
    def working(self) -> bool:
        """Whether the old secret still works, as the new key, now."""
        return self.stops_at is not None and self.stops_at > timezone.now()

    def as_json(self) -> dict[str, Any]:
        return {
            "keyId": self.key_id,
            "hint": self.hint,
            "serviceAccount": self.account,
            "at": iso_time(self.at),
            "oldSecretWorksUntil": iso_time(self.stops_at)
            if self.stops_at and self.working
            else None,
        }


def handed_over_to(key: ApiKey) -> HandOver | None:
    """The hand-over that replaced `key`, or None for a key never handed over."""
    if key.revoked_at is None:
        return None
    event = (
        AuditEvent.objects.filter(
            workspace_id=key.workspace_id, action=KEY_HANDED_OVER_ACTION, data__fromKey__id=key.pk
        )
        .order_by("-created_at")
        .first()
    )
    if event is None:
        return None
    granted = _moment(event.data.get("oldSecretStopsAt"))
    return HandOver(
        key_id=event.data["toKey"]["id"],
        hint=event.data["toKey"]["hint"],
        account=event.data["serviceAccount"]["name"],
        at=event.created_at,
        granted_until=granted,
        stops_at=_grace_end(key, event.data["toKey"]["id"], granted),
    )


def _grace_end(key: ApiKey, new_key_id: int, granted: datetime | None) -> datetime | None:
    """When the old secret really stops working as the new key: the grace granted, or sooner
    when a leak report ended it, the new key was rolled (its own old secret took the place),
    or the new key was revoked."""
    new = (
        ApiKey.objects.filter(pk=new_key_id)
        .only("previous_secret_hash", "previous_secret_expires_at", "rolled_at", "revoked_at")
        .first()
    )
    if new is None or granted is None:
        return granted
    stops: datetime | None = granted
    if new.previous_secret_hash == key.secret_hash:
        stops = new.previous_secret_expires_at
    elif new.rolled_at is not None and new.rolled_at < granted:
        stops = new.rolled_at
    if new.revoked_at is not None and (stops is None or new.revoked_at < stops):
        stops = new.revoked_at
    return stops


def _moment(value: object) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None
