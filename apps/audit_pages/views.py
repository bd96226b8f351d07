"""The Audit page and its CSV export (owners and admins)."""

from collections.abc import Iterator
from zoneinfo import ZoneInfo

from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from apps.audit.actions import action_choices
from apps.audit.models import AuditEvent
from apps.common.spreadsheet import csv_lines
from apps.workspaces.decorators import WorkspaceRequest, workspace_staff_required

from .presentation import CSV_COLUMNS, AuditRow, csv_row
from .selectors import AuditFilters, audit_events, audit_filter_choices

EVENTS_PER_PAGE = 50


@require_http_methods(["GET"])
@workspace_staff_required()
def audit_log(request: WorkspaceRequest) -> HttpResponse:
    filters = AuditFilters.from_query(request.GET)
    page = Paginator(audit_events(request.workspace, filters), EVENTS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    return render(
        request,
        "audit/log.html",
        {
            "page": page,
            "rows": [AuditRow.of(event) for event in page.object_list],
            "filters": filters,
            "filter_query": filters.as_query(),
            "actions": action_choices(),
            **audit_filter_choices(request.workspace),
        },
    )


def _rows(events: QuerySet[AuditEvent], zone: ZoneInfo) -> Iterator[list[str]]:
    """One row per event, one column per fact, values as the page shows them."""
    yield CSV_COLUMNS
    for event in events.iterator(chunk_size=500):
        yield csv_row(event, zone)


@require_http_methods(["GET"])
@workspace_staff_required()
def audit_export(request: WorkspaceRequest) -> StreamingHttpResponse:
    filters = AuditFilters.from_query(request.GET)
    response = StreamingHttpResponse(
        csv_lines(
            _rows(audit_events(request.workspace, filters), ZoneInfo(request.workspace.timezone))
        ),
        content_type="text/csv; charset=utf-8",
    )
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="gatehouse-audit-{stamp}.csv"'
    return response
