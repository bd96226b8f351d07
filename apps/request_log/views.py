"""The Logs page (owners and admins): every request the workspace's keys made, filtered, a row
opening to its details, the filtered view as CSV; and the key page's parts (templatetags)."""

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta
from typing import Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from django.http import HttpResponse, QueryDict, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from apps.api_keys.models import ApiKey
from apps.common.dates import moment_text, parse_day_text
from apps.common.http import ip_address_or_none
from apps.common.spreadsheet import csv_lines
from apps.common.validation import InvalidInput, parse_id
from apps.workspaces.decorators import WorkspaceRequest, workspace_staff_required

from .models import RequestLogEntry
from .reading import STATUS_CLASSES, LogFilters, LogRow, parse_status, requests_page

CSV_LIMIT = 100_000
CSV_COLUMNS = [
    "time",
    "time_utc",
    "request_id",
    "key_id",
    "key_name",
    "door",
    "method",
    "path",
    "operation",
    "status",
    "error",
    "duration_ms",
    "client_ip",
    "user_agent",
]
FIELDS = ("key", "door", "status", "error", "operation", "address", "since", "until", "q")
LABELS = {"q": "request id"}  # how the page names a filter it ignored, when not by its field


def _day_start(day: Any) -> datetime:
    """Midnight of `day` in the workspace's time zone (the one the page is shown in)."""
    return timezone.make_aware(datetime.combine(day, time()), timezone.get_current_timezone())


def filters_from_query(query: QueryDict, keys: dict[int, ApiKey]) -> tuple[LogFilters, list[str]]:
    """The filters a query asks for, and the names of those it gave values that are not valid
    (left out, and said so on the page)."""
    ignored: list[str] = []
    values = {name: query.get(name, "").strip() for name in FIELDS}
    key_id = None
    if values["key"]:
        key_id = parse_id(values["key"])
        if key_id not in keys:
            ignored.append("key")
            key_id = None
    door = values["door"] if values["door"] in ("api", "mcp") else ""
    if values["door"] and not door:
        ignored.append("door")
    status = values["status"]
    if status:
        try:
            parse_status(status)
        except InvalidInput:
            ignored.append("status")
            status = ""
    since = until = None
    if values["since"]:
        day = parse_day_text(values["since"])
        since = _day_start(day) if day else None
        if day is None:
            ignored.append("since")
    if values["until"]:
        day = parse_day_text(values["until"])
        until = _day_start(day) + timedelta(days=1) if day else None
        if day is None:
            ignored.append("until")
    address = values["address"]
    if address:
        address = ip_address_or_none(address) or ""
        if not address:  # a zone id, a network, anything else: no address of a request
            ignored.append("address")
    request_id = values["q"]
    if request_id and not (
        request_id.startswith("req_") and request_id.isascii() and request_id.isprintable()
    ):
        ignored.append(LABELS["q"])
        request_id = ""
    # Free text matched as it is: a control character (NUL, which PostgreSQL's text refuses)
    # is in no error code or operation name.
    error, operation = values["error"], values["operation"]
    if not error.isprintable():
        ignored.append("error")
        error = ""
    if not operation.isprintable():
        ignored.append("operation")
        operation = ""
    filters = LogFilters(
        key_id=key_id,
        door=door,
        status=status,
        error=error[:40],
        operation=operation[:64],
        address=address,
        since=since,
        until=until,
        request_id=request_id[:32],
    )
    return filters, ignored


def _keys(request: WorkspaceRequest) -> dict[int, ApiKey]:
    """The workspace's keys by id, with what the page and the export show of them."""
    keys = ApiKey.objects.filter(workspace=request.workspace).select_related("user")
    keys = keys.only("name", "hint", "user__email")
    return {key.pk: key for key in keys.order_by("name", "pk")}


@require_http_methods(["GET"])
@workspace_staff_required()
def logs_page(request: WorkspaceRequest) -> HttpResponse:
    keys = _keys(request)
    filters, ignored = filters_from_query(request.GET, keys)
    try:
        page, more = requests_page(
            request.workspace.pk, filters, cursor=request.GET.get("cursor") or None
        )
    except InvalidInput:  # a cursor that is not one: the first page
        ignored.append("cursor")
        page, more = requests_page(request.workspace.pk, filters)
    query = {
        name: request.GET[name]
        for name in FIELDS
        if request.GET.get(name) and LABELS.get(name, name) not in ignored
    }
    filter_query = urlencode(query)
    return render(
        request,
        "request_log/logs.html",
        {
            "requests": [LogRow(entry, keys.get(entry.key_id)) for entry in page],
            "next_query": urlencode({**query, "cursor": more}) if more else "",
            "filter_query": filter_query,
            "filters": {name: request.GET.get(name, "") for name in FIELDS},
            "ignored": ignored,
            "keys": keys.values(),
            "status_classes": STATUS_CLASSES,
            "is_later_page": bool(request.GET.get("cursor")),
        },
    )


@require_http_methods(["GET"])
@workspace_staff_required()
def logs_export(request: WorkspaceRequest) -> StreamingHttpResponse:
    """The filtered view as CSV, newest first (at most 100,000 rows): each time as the page
    writes it, and exactly in UTC. A filter it cannot read is left out, as on the page (and
    as the audit log's export does); the page's Export link carries only those it read."""
    keys = _keys(request)
    filters, _ignored = filters_from_query(request.GET, keys)
    rows = filters.apply(RequestLogEntry.objects.filter(workspace_id=request.workspace.pk))
    rows = rows.order_by("-at", "-id")[:CSV_LIMIT]
    # Rows are written after the view returns, outside its time zone: name the zone here.
    zone = ZoneInfo(request.workspace.timezone)

    def lines() -> Iterator[list[Any]]:
        for entry in rows.iterator(chunk_size=2000):
            key = keys.get(entry.key_id)
            yield [
                moment_text(entry.at, zone),  # as the page writes it, in the workspace's zone
                entry.at.astimezone(UTC).isoformat().replace("+00:00", "Z"),  # exact, sortable
                entry.request_id,
                entry.key_id,
                key.name if key else "",
                entry.door,
                entry.method,
                entry.path,
                entry.operation,
                entry.status,
                entry.error,
                "" if entry.duration_ms is None else entry.duration_ms,
                entry.client_ip or "",
                entry.user_agent,
            ]

    response = StreamingHttpResponse(
        csv_lines(itertools.chain([CSV_COLUMNS], lines())), content_type="text/csv"
    )
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="gatehouse-requests-{stamp}.csv"'
    return response
