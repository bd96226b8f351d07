"""A stream as the API and the Settings page describe it: where it sends (never a header's
value nor its secret), its state, and how far behind it is."""

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db.models import Count, Min
from django.utils import timezone

from apps.api.http import iso_time

from .models import PAUSED, AuditStream

if TYPE_CHECKING:
    from apps.workspaces.models import Workspace


@dataclass(frozen=True)
class StreamStatus:
    """A stream with its backlog: how many events wait, and since when the oldest does."""

    stream: AuditStream
    backlog: int
    oldest: datetime | None

    @property
    def state(self) -> str:
        if self.stream.enabled:
            return "failing" if self.stream.failing_since else "active"
        return "paused" if self.stream.disabled_reason == PAUSED else "disabled"

    @property
    def lag_seconds(self) -> int:
        return max(0, int((timezone.now() - self.oldest).total_seconds())) if self.oldest else 0


def streams_status(workspace: "Workspace") -> list[StreamStatus]:
    """The workspace's streams, oldest first, each with its backlog (one query)."""
    streams = (
        AuditStream.objects.filter(workspace=workspace)
        .annotate(backlog=Count("items"), oldest=Min("items__created_at"))
        .order_by("created_at", "id")  # Meta.ordering is not applied to a GROUP BY
    )
    return [StreamStatus(s, s.backlog, s.oldest) for s in streams]


def _time(value: datetime | None) -> str | None:
    return iso_time(value) if value else None


def stream_to_json(status: StreamStatus) -> dict[str, Any]:
    stream = status.stream
    https = stream.kind == AuditStream.Kind.HTTPS
    return {
        "id": stream.pk,
        "kind": stream.kind,
        "name": stream.name,
        "events": list(stream.actions),
        "url": stream.url if https else None,
        "headers": list(stream.header_names),
        "host": None if https else stream.host,
        "port": None if https else stream.port,
        "state": status.state,
        "disabledReason": stream.disabled_reason or None,
        "createdAt": iso_time(stream.created_at),
        "backlog": status.backlog,
        "lagSeconds": status.lag_seconds,
        "delivered": stream.delivered_count,
        "lastDeliveryAt": _time(stream.last_delivery_at),
        "lastError": stream.last_error or None,
        "lastErrorAt": _time(stream.last_error_at),
    }
