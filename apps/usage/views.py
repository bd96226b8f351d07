"""The workspace's Usage page and its CSV (owners and admins)."""

from collections.abc import Iterator
from datetime import timedelta

from django.db.models import Q, Sum
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from apps.api_keys.models import ApiKey
from apps.common.spreadsheet import csv_lines
from apps.workspaces.decorators import WorkspaceRequest, workspace_staff_required

from .charts import daily_chart, hourly_chart
from .models import KeyUsageDay, KeyUsageHour

SPAN_DAYS = 30
BUSIEST = 10
REFUSED = ("401", "403", "429")


@require_http_methods(["GET"])
@workspace_staff_required()
def usage_page(request: WorkspaceRequest) -> HttpResponse:
    """Totals of the last 30 days, requests a day and an hour, and the ten busiest keys."""
    today = timezone.now().date()
    days = KeyUsageDay.objects.filter(key__workspace=request.workspace)
    recent = days.filter(day__gt=today - timedelta(days=SPAN_DAYS))
    busiest = (
        recent.values("key_id")
        .annotate(
            total=Sum("count"),
            refused=Sum("count", filter=Q(outcome__in=REFUSED)),
            errors=Sum("count", filter=Q(outcome="5xx")),
        )
        .order_by("-total", "key_id")[:BUSIEST]
    )
    keys = ApiKey.objects.filter(pk__in=[row["key_id"] for row in busiest]).select_related("user")
    by_id = {key.pk: key for key in keys}
    sums = recent.aggregate(total=Sum("count"), refused=Sum("count", filter=Q(outcome__in=REFUSED)))
    context = {
        "daily": daily_chart(days, today=today, title="Requests a day, last 30 days"),
        "hourly": hourly_chart(
            KeyUsageHour.objects.filter(key__workspace=request.workspace),
            now=timezone.now(),
            title="Requests an hour, last 24 hours",
        ),
        "total": sums["total"] or 0,
        "refused": sums["refused"] or 0,
        "active_keys": recent.values("key_id").distinct().count(),
        "busiest": [{**row, "key": by_id[row["key_id"]]} for row in busiest],
    }
    return render(request, "usage/usage.html", context)


@require_http_methods(["GET"])
@workspace_staff_required()
def usage_export(request: WorkspaceRequest) -> StreamingHttpResponse:
    """The last 30 days as CSV: one row per day, key, operation and outcome."""
    first = timezone.now().date() - timedelta(days=SPAN_DAYS - 1)
    rows = (
        KeyUsageDay.objects.filter(key__workspace=request.workspace, day__gte=first)
        .select_related("key", "key__user")
        .order_by("day", "key_id", "operation", "outcome")
    )

    def lines() -> Iterator[list[object]]:
        yield ["day", "key_id", "key_name", "key_hint", "holder", "operation", "outcome", "count"]
        for row in rows.iterator(chunk_size=1000):
            key = row.key
            yield [
                row.day,
                key.pk,
                key.name,
                key.hint,
                key.user.email,
                row.operation,
                row.outcome,
                row.count,
            ]

    response = StreamingHttpResponse(csv_lines(lines()), content_type="text/csv; charset=utf-8")
    stamp = timezone.now().strftime("%Y%m%d")
    response["Content-Disposition"] = f'attachment; filename="usage-{stamp}.csv"'
    return response
