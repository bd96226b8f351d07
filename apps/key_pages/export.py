"""The key inventory as CSV: the filtered list, everything on it, never a secret or a hash;
times in the workspace's zone as the pages write them, a holder as people read it."""

from collections.abc import Iterator
from zoneinfo import ZoneInfo

from django.http import StreamingHttpResponse
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.common.dates import moment_text
from apps.common.spreadsheet import csv_lines
from apps.common.text import holder
from apps.workspaces.decorators import WorkspaceRequest

from .pages import KeyPages, for_both_audiences
from .selectors import KeyFilters

INVENTORY_COLUMNS = [
    "name",
    "description",
    "hint",
    "kind",
    "holder",
    "scopes",
    "state",
    "created_at",
    "expires_at",
    "last_used_at",
    "last_used_ip",
    "revoked_at",
    "unused_scopes_30_days",
    "restrictions",
    "chosen_communities",
    "chosen_pages",
    "chosen_products",
    "allowed_networks",
    "rate_limit_per_minute",
]


def _restriction_cells(key: ApiKey) -> list[str]:
    """A key's restrictions for the CSV: the summary, each group's chosen ids ("all" when the
    key is not limited in it), the networks and the own rate limit."""
    restrictions = key.restrictions
    chosen = [
        "all" if ids is None else " ".join(map(str, ids)) for ids in restrictions.chosen.values()
    ]
    rate = restrictions.rate_limit_per_minute
    return [
        restrictions.summary(),
        *chosen,
        " ".join(restrictions.networks),
        "" if rate is None else str(rate),
    ]


def key_export_page(request: WorkspaceRequest, pages: KeyPages) -> StreamingHttpResponse:
    """The filtered inventory as CSV: everything on the list, never a secret or a hash."""
    filters = KeyFilters.from_query(request.GET)
    keys = filters.apply(pages.keys(request).select_related("user"))
    now = timezone.now()
    # Rows are written after the view returns, outside its time zone: name the zone here.
    zone = ZoneInfo(request.workspace.timezone)

    def rows() -> Iterator[list[str]]:
        yield INVENTORY_COLUMNS
        for key in keys.iterator(chunk_size=500):
            yield [
                key.name,
                key.description,
                key.hint,
                "cli" if key.is_cli else key.kind,
                holder(key.user),
                " ".join(key.scopes),
                key.state_at(now),
                # One date format with the pages: the workspace's zone, named.
                moment_text(key.created_at, zone),
                moment_text(key.expires_at, zone) if key.expires_at else "",
                moment_text(key.last_used_at, zone) if key.last_used_at else "",
                key.last_used_ip or "",
                moment_text(key.revoked_at, zone) if key.revoked_at else "",
                " ".join(key.unused_scopes_at(now)) if key.state_at(now) == "active" else "",
                *_restriction_cells(key),
            ]

    response = StreamingHttpResponse(csv_lines(rows()), content_type="text/csv; charset=utf-8")
    stamp = now.strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="gatehouse-keys-{stamp}.csv"'
    return response


key_export, member_key_export = for_both_audiences(key_export_page, ["GET"])
