"""The workspace's Usage page and its CSV (owners and admins)."""

from collections import defaultdict
from collections.abc import Iterator
from datetime import timedelta

from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from apps.api_keys.models import ApiKey
from apps.common.spreadsheet import csv_lines
from apps.common.text import holder
from apps.quotas.uses import attach_quota_uses
from apps.workspaces.decorators import WorkspaceRequest, workspace_staff_required

from .charts import daily_chart, hourly_chart
from .models import KeyUsageHour
from .reading import daily_rows

SPAN_DAYS = 30
BUSIEST = 10
REFUSED = ("401", "403", "429")


@require_http_methods(["GET"])
@workspace_staff_required()
def usage_page(request: WorkspaceRequest) -> HttpResponse:
    """Totals of the last 30 days, requests a day and an hour, and the ten busiest keys."""
    now = timezone.now()
    today = now.date()
    workspace = request.workspace
    per_key: dict[int, dict[str, int]] = defaultdict(
        lambda: {"total": 0, "refused": 0, "errors": 0}
    )
    first = today - timedelta(days=SPAN_DAYS - 1)
    for row in daily_rows(("key_id", "outcome"), first, today, key__workspace=workspace):
        sums = per_key[row["key_id"]]
        sums["total"] += row["total"]
        sums["refused"] += row["total"] if row["outcome"] in REFUSED else 0
        sums["errors"] += row["total"] if row["outcome"] == "5xx" else 0
    busiest = sorted(per_key.items(), key=lambda item: (-item[1]["total"], item[0]))[:BUSIEST]
    keys = ApiKey.objects.filter(pk__in=[key_id for key_id, _ in busiest]).select_related("user")
    by_id = {key.pk: key for key in keys}
    attach_quota_uses(by_id.values())
    context = {
        "daily": daily_chart(
            today=today, title="Requests a day, last 30 days", key__workspace=workspace
        ),
        "hourly": hourly_chart(
            KeyUsageHour.objects.filter(key__workspace=workspace),
            now=now,
            title="Requests an hour, last 24 hours",
        ),
        "total": sum(sums["total"] for sums in per_key.values()),
        "refused": sum(sums["refused"] for sums in per_key.values()),
        "active_keys": len(per_key),
        "busiest": [{**sums, "key_id": key_id, "key": by_id[key_id]} for key_id, sums in busiest],
    }
    return render(request, "usage/usage.html", context)


@require_http_methods(["GET"])
@workspace_staff_required()
def usage_export(request: WorkspaceRequest) -> StreamingHttpResponse:
    """The last 30 days as CSV: one row per day, key, operation and outcome."""
    today = timezone.now().date()
    fields = ("day", "key_id", "operation", "outcome")
    rows = daily_rows(
        fields, today - timedelta(days=SPAN_DAYS - 1), today, key__workspace=request.workspace
    )
    keys = {
        key.pk: key
        for key in ApiKey.objects.filter(workspace=request.workspace).select_related("user")
    }

    def lines() -> Iterator[list[object]]:
        yield ["day", "key_id", "key_name", "key_hint", "holder", "operation", "outcome", "count"]
        for row in rows:
            key = keys[row["key_id"]]
            yield [
                row["day"],
                key.pk,
                key.name,
                key.hint,
                holder(key.user),
                row["operation"],
                row["outcome"],
                row["total"],
            ]

    response = StreamingHttpResponse(csv_lines(lines()), content_type="text/csv; charset=utf-8")
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="gatehouse-usage-{stamp}.csv"'
    return response
