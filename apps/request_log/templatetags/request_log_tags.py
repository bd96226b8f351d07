"""`{% key_requests key %}` and `{% key_blast_radius key %}`: a key's latest requests and, for a
revoked key, what it did; for its page in the dashboard and the member portal (the key pages
live beside this app, so they reach it through the template only). The key is one the page
already found through the signed-in person's workspace."""

from datetime import datetime, timedelta
from typing import Any

from django import template
from django.utils import timezone
from django.utils.safestring import SafeString

from apps.common.dates import moment_text, parse_moment_text
from apps.common.validation import InvalidInput

from ..objects import objects_named
from ..reading import LogFilters, LogRow, blast_radius, parse_when, requests_page
from ..rows import request_rows as rows_html

register = template.Library()

KEY_PAGE_ROWS = 20
OUTCOMES = (("", "All"), ("2xx", "Succeeded"), ("4xx", "Refused or invalid"), ("5xx", "Failed"))
BLAST_WINDOW = timedelta(hours=24)


@register.inclusion_tag("request_log/_key_requests.html", takes_context=True)
def key_requests(context: dict[str, Any], key: Any) -> dict[str, Any]:
    request = context["request"]
    outcome = request.GET.get("requests", "")
    if outcome not in dict(OUTCOMES):
        outcome = ""
    rows, more = requests_page(
        key.workspace_id, LogFilters(key_id=key.pk, status=outcome), limit=KEY_PAGE_ROWS
    )
    return {
        "key": key,
        "requests": [LogRow(entry) for entry in rows],
        "more": more,
        "outcome": outcome,
        "outcomes": OUTCOMES,
        "member_pages": context.get("member_pages", False),
        "request": request,
    }


def _local_moment(value: str) -> datetime:
    """A moment as the page writes it (`Nov 25, 2026 14:02 UTC`, or `2026-11-25T14:02`, in the
    workspace's time zone), or as the API takes it."""
    moment = parse_moment_text(value, timezone.get_current_timezone())
    return moment if moment is not None else parse_when(value, "since")


@register.inclusion_tag("request_log/_blast_radius.html", takes_context=True)
def key_blast_radius(context: dict[str, Any], key: Any) -> dict[str, Any]:
    """For a revoked key (a leak report revokes too): since 24 hours before the revocation by
    default, or since the moment the page was asked for (`?since=`)."""
    if key.revoked_at is None:
        return {"shown": False}
    request = context["request"]
    default = key.revoked_at - BLAST_WINDOW
    since, problem = default, ""
    if request.GET.get("since"):
        try:
            since = _local_moment(request.GET["since"])
        except InvalidInput:
            problem = (
                "That moment is not one this page can read: showing from 24 hours before "
                "the revocation."
            )
    radius = blast_radius(key.workspace_id, key.pk, since)
    member_pages = context.get("member_pages", False)
    objects = objects_named(key.workspace_id, radius.objects)
    if member_pages:  # the dashboard's pages of keys and communities are not a member's
        objects = [{**row, "url": ""} for row in objects]
    return {
        "shown": True,
        "key": key,
        "radius": radius,
        "objects": objects,
        "since_value": moment_text(since),
        "zone": timezone.get_current_timezone_name(),
        "default_since": since == default,
        "problem": problem,
        "member_pages": member_pages,
    }


@register.simple_tag
def request_rows(requests: list[LogRow], show_key: bool, found_id: str = "") -> SafeString:
    """`{% request_rows requests show_key found_id %}`: the rows of a list of requests."""
    return rows_html(requests, show_key=bool(show_key), found_id=found_id or "")
