"""Writing the request log: entries gathered by the usage flush (apps/api/usage.py) in one
`COPY` on PostgreSQL (a multi-row insert elsewhere), the partitions of their days made first;
and the daily job that keeps `REQUEST_LOG_DAYS` whole days."""

import json
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from apps.api.usage import Gathered, RequestEntry, entry_of_fields
from apps.api_keys.models import ApiKey

from .models import RequestLogEntry
from .partitions import partitions_drop_before, partitions_ensure

COLUMNS = (
    "request_id",
    "at",
    "key_id",
    "door",
    "method",
    "path",
    "operation",
    "status",
    "error",
    "duration_ms",
    "client_ip",
    "user_agent",
)


def entries_write(entries: Iterable[RequestEntry]) -> int:
    """Write the entries of keys that still exist, each with its key's workspace; how many."""
    entries = list(entries)
    if not entries:
        return 0
    workspaces = dict(
        ApiKey.objects.filter(pk__in={entry[2] for entry in entries}).values_list(
            "pk", "workspace_id"
        )
    )
    rows = [entry for entry in entries if entry[2] in workspaces]
    if not rows:
        return 0
    partitions_ensure({entry[1].astimezone(UTC).date() for entry in rows})
    if connection.vendor == "postgresql":
        columns = ", ".join(f'"{name}"' for name in (*COLUMNS, "workspace_id"))
        with connection.cursor() as cursor:
            raw = cursor.cursor  # psycopg's own cursor: COPY is not in the DB-API
            with raw.copy(f'COPY "request_log" ({columns}) FROM STDIN') as copy:
                for entry in rows:
                    copy.write_row((*entry, workspaces[entry[2]]))
    else:
        RequestLogEntry.objects.bulk_create(
            [
                RequestLogEntry(
                    **dict(zip(COLUMNS, entry, strict=True)), workspace_id=workspaces[entry[2]]
                )
                for entry in rows
            ],
            batch_size=500,
        )
    return len(rows)


def write_gathered(gathered: Gathered) -> None:
    """The request log's part of a usage flush: the buffer's entries, and whole entries that
    were to go to Redis while it was away."""
    entries = list(gathered.requests)
    for item in gathered.request_items:
        entries.append(entry_of_fields(json.loads(item[2:])))
    if entries:
        with transaction.atomic():
            entries_write(entries)


def request_log_prune(now: datetime | None = None) -> str:
    """Keep `REQUEST_LOG_DAYS` whole days (UTC): on PostgreSQL drop older days' partitions and
    make the next two days', elsewhere delete older rows."""
    today = (now or timezone.now()).astimezone(UTC).date()
    first_kept = today - timedelta(days=settings.REQUEST_LOG_DAYS - 1)
    if connection.vendor == "postgresql":
        partitions_ensure({today, today + timedelta(days=1), today + timedelta(days=2)})
        dropped = partitions_drop_before(first_kept)
        return f"dropped {len(dropped)} days of the request log"
    start = datetime(first_kept.year, first_kept.month, first_kept.day, tzinfo=UTC)
    deleted, _ = RequestLogEntry.objects.filter(at__lt=start).delete()
    return f"deleted {deleted} request log rows"


def request_log_daily() -> str:
    """The daily job."""
    from .moving import request_log_moves_prune

    request_log_moves_prune()
    return request_log_prune()
