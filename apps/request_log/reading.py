"""Reading the request log: a key's requests, a workspace's with filters, one request by its id,
and what a leaked key did (its blast radius). Every query starts from a workspace or a key the
caller reached through its own workspace, and runs on an index that starts the same way."""

import base64
import binascii
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import Count, Max, Min, Q, QuerySet
from django.utils import timezone

from apps.api.http import iso_time
from apps.api_keys.models import ApiKey
from apps.common.validation import InvalidInput, parse_moment

from .models import RequestLogEntry

PAGE = 50
STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx")
AGO = re.compile(r"^(\d{1,5})([smhd])$")
AGO_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_status(value: str, field: str = "status") -> Q:
    """A status filter: a class (`2xx`, `4xx`, …) or one status (`429`)."""
    value = value.strip().lower()
    if value in STATUS_CLASSES:
        low = int(value[0]) * 100
        return Q(status__gte=low, status__lt=low + 100)
    if value.isascii() and value.isdigit() and 100 <= int(value) <= 599:
        return Q(status=int(value))
    raise InvalidInput(field, f"{field} must be 2xx, 3xx, 4xx, 5xx or a status such as 429.")


def parse_when(value: str, field: str, now: datetime | None = None) -> datetime:
    """A moment: an RFC 3339 date-time, or a time ago (`30m`, `2h`, `7d`)."""
    match = AGO.match(value.strip()) if isinstance(value, str) else None
    if match is not None:
        amount, unit = int(match.group(1)), AGO_UNITS[match.group(2)]
        return (now or timezone.now()) - timedelta(**{unit: amount})
    try:
        return parse_moment(value, field)
    except InvalidInput:
        raise InvalidInput(
            field,
            f"{field} must be a date-time with a time zone (2027-03-31T12:00:00Z) "
            "or a time ago (30m, 2h, 7d).",
        ) from None


def encode_cursor(entry: RequestLogEntry) -> str:
    raw = f"{entry.pk}|{entry.at.isoformat()}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _after_cursor(cursor: str) -> Q:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        pk, _, stamp = text.partition("|")
        key, at = int(pk), datetime.fromisoformat(stamp)
        if at.tzinfo is None:
            raise ValueError(stamp)
    except (binascii.Error, UnicodeDecodeError, ValueError, OverflowError, OSError):
        raise InvalidInput(
            "cursor", "cursor must be the `next` value of an earlier page."
        ) from None
    return Q(at__lt=at) | Q(at=at, pk__lt=key)


@dataclass(frozen=True)
class LogFilters:
    """What a list of requests is narrowed to; every field optional."""

    key_id: int | None = None
    door: str = ""
    status: str = ""
    error: str = ""
    operation: str = ""
    address: str = ""
    since: datetime | None = None
    until: datetime | None = None
    request_id: str = ""

    def apply(self, rows: QuerySet[RequestLogEntry]) -> QuerySet[RequestLogEntry]:
        if self.key_id is not None:
            rows = rows.filter(key_id=self.key_id)
        if self.door:
            rows = rows.filter(door=self.door)
        if self.status:
            rows = rows.filter(parse_status(self.status))
        if self.error:
            rows = rows.filter(error=self.error)
        if self.operation:
            rows = rows.filter(operation=self.operation)
        if self.address:
            rows = rows.filter(client_ip=self.address)
        if self.since is not None:
            rows = rows.filter(at__gte=self.since)
        if self.until is not None:
            rows = rows.filter(at__lt=self.until)
        if self.request_id:
            rows = rows.filter(request_id=self.request_id)
        return rows


# The newest requests are looked for in the last day's partitions first: a query bounded there
# is planned over two partitions instead of every day kept (planning grew to 6 ms at 90 days).
RECENT = timedelta(days=1)


def requests_page(
    workspace_id: Any,
    filters: LogFilters,
    *,
    cursor: str | None = None,
    limit: int = PAGE,
    now: datetime | None = None,
) -> tuple[list[RequestLogEntry], str | None]:
    """A page of the workspace's requests, newest first, and the cursor of the next page.

    On PostgreSQL it reads the last day first (yesterday's start on), and the older days only
    when that day holds less than a page: the same rows in the same order, in one query for a
    key in use.
    """
    rows = filters.apply(RequestLogEntry.objects.filter(workspace_id=workspace_id))
    if cursor:
        rows = rows.filter(_after_cursor(cursor))
    ordered = rows.order_by("-at", "-id")
    if connection.vendor == "postgresql":
        recent = ((now or timezone.now()) - RECENT).replace(hour=0, minute=0, second=0)
        recent = recent.replace(microsecond=0)
        page = list(ordered.filter(at__gte=recent)[: limit + 1])
        if len(page) <= limit:
            page += list(ordered.filter(at__lt=recent)[: limit + 1 - len(page)])
    else:
        page = list(ordered[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    return page, encode_cursor(page[-1]) if more and page else None


@dataclass(frozen=True)
class LogRow:
    """A request as a list shows it: its entry, and its key when the list names keys (None
    for a key since deleted, or in a list of one key's requests)."""

    entry: RequestLogEntry
    key: ApiKey | None = None


def request_to_json(entry: RequestLogEntry) -> dict[str, Any]:
    """A request as the API, MCP and the CLI show it."""
    return {
        "requestId": entry.request_id,
        "time": iso_time(entry.at),
        "door": entry.door,
        "method": entry.method,
        "path": entry.path,
        "operation": entry.operation,
        "status": entry.status,
        "error": entry.error or None,
        "durationMs": entry.duration_ms,
        "clientIp": entry.client_ip,
        "userAgent": entry.user_agent,
    }


@dataclass(frozen=True)
class BlastRadius:
    """What a key did since a moment: its requests by operation and outcome, the objects its
    successful writes created or changed, and the addresses it came from."""

    since: datetime
    total: int
    by_operation: list[dict[str, Any]]
    objects: list[dict[str, Any]]
    addresses: list[dict[str, Any]]


# Reads by the registry's names (list_pages, get_key; MCP rows before one vocabulary across
# doors said mcp:list_pages): every other successful call that names an object changed it.
READS = (
    Q(operation__startswith="list_")
    | Q(operation__startswith="get_")
    | Q(operation__startswith="mcp:list_")
    | Q(operation__startswith="mcp:get_")
)


def _grouped(rows: QuerySet[RequestLogEntry], *fields: str, order: str) -> list[dict[str, Any]]:
    grouped = rows.values(*fields).annotate(count=Count("id"), first=Min("at"), last=Max("at"))
    return [dict(row) for row in grouped.order_by(order, *fields)]


def blast_radius(workspace_id: Any, key_id: int, since: datetime) -> BlastRadius:
    """Three grouped queries over the key's index (key, time)."""
    rows = RequestLogEntry.objects.filter(workspace_id=workspace_id, key_id=key_id, at__gte=since)
    by_operation = _grouped(rows, "operation", "status", order="-count")
    changed = rows.filter(status__gte=200, status__lt=300).exclude(object_id="").exclude(READS)
    return BlastRadius(
        since=since,
        total=sum(group["count"] for group in by_operation),
        by_operation=by_operation,
        objects=_grouped(changed, "operation", "object_id", order="first"),
        addresses=_grouped(rows, "client_ip", order="first"),
    )
