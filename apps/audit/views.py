"""The Audit page and its CSV export (owners and admins)."""

from collections.abc import Iterator

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from apps.common.spreadsheet import csv_lines
from apps.workspaces.decorators import workspace_staff_required

from .models import Action, AuditEvent
from .selectors import AuditFilters, audit_events, audit_filter_choices

EVENTS_PER_PAGE = 50
CSV_COLUMNS = ["time", "action", "actor", "ip", "key", "subject", "details"]


@require_http_methods(["GET"])
@workspace_staff_required()
def audit_log(request: HttpRequest) -> HttpResponse:
    filters = AuditFilters.from_query(request.GET)
    page = Paginator(audit_events(request.workspace, filters), EVENTS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    return render(
        request,
        "audit/log.html",
        {
            "page": page,
            "filters": filters,
            "filter_query": filters.as_query(),
            "actions": Action.choices,
            **audit_filter_choices(request.workspace),
        },
    )


def _details(event: AuditEvent) -> str:
    data = event.data or {}
    if "before" in data or "after" in data:
        name = data.get("field", data.get("email", ""))
        return f"{name}: {data.get('before')!r} → {data.get('after')!r}"
    return ", ".join(f"{k}={v}" for k, v in data.items())


def _rows(events) -> Iterator[list[str]]:
    yield CSV_COLUMNS
    for event in events.iterator(chunk_size=500):
        yield [
            event.created_at.isoformat(),
            event.action,
            event.actor_label,
            event.ip,
            event.key.hint if event.key else "",
            event.subject,
            _details(event),
        ]


@require_http_methods(["GET"])
@workspace_staff_required()
def audit_export(request: HttpRequest) -> StreamingHttpResponse:
    filters = AuditFilters.from_query(request.GET)
    response = StreamingHttpResponse(
        csv_lines(_rows(audit_events(request.workspace, filters))),
        content_type="text/csv; charset=utf-8",
    )
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="gatehouse-audit-{stamp}.csv"'
    return response
