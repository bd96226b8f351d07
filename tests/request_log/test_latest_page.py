"""A page of the request log reads the last day first (issue 42 item 7): the same rows in the
same order as one query over every day, across the boundary and through every cursor, and a
busy key's latest page in one query bounded to the recent partitions."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.metering.records import RequestEntry
from apps.request_log.models import RequestLogEntry
from apps.request_log.reading import LogFilters, requests_page
from apps.request_log.recording import entries_write
from tests.factories import make_key

pytestmark = pytest.mark.django_db(transaction=True)
NOW = datetime(2031, 3, 10, 9, 30, tzinfo=UTC)


def _log(key_id: int, moments: list[datetime]) -> None:
    entries_write(
        RequestEntry(
            f"req_{uuid.uuid4().hex[:24]}",
            moment,
            key_id,
            "api",
            "GET",
            "/api/v1/workspace",
            "get_workspace",
            200,
            "",
            1.0,
            "127.0.0.1",
            "t",
            "",
        )
        for moment in moments
    )


def _walk(workspace_id, filters: LogFilters, limit: int) -> list[int]:
    seen, cursor = [], None
    while True:
        page, cursor = requests_page(workspace_id, filters, cursor=cursor, limit=limit, now=NOW)
        seen += [entry.pk for entry in page]
        if cursor is None:
            return seen


@pytest.mark.parametrize("limit", [1, 3, 7, 50])
def test_pages_across_the_recent_boundary_are_the_whole_log_in_order(limit):
    key = make_key()
    yesterday = NOW.replace(hour=0, minute=0) - timedelta(days=1)
    moments = [NOW - timedelta(hours=h) for h in range(0, 70, 3)]
    moments += [yesterday, yesterday - timedelta(microseconds=1), yesterday + timedelta(seconds=1)]
    moments += [NOW - timedelta(days=20)] * 3  # equal times: the id decides
    _log(key.key.pk, moments)
    every = list(
        RequestLogEntry.objects.filter(key_id=key.key.pk)
        .order_by("-at", "-id")
        .values_list("pk", flat=True)
    )
    filters = LogFilters(key_id=key.key.pk)
    assert _walk(key.key.workspace_id, filters, limit) == every
    assert len(every) == len(moments)


@pytest.mark.postgres
def test_a_busy_keys_latest_page_is_one_query_bounded_to_the_last_day():
    key = make_key()
    _log(key.key.pk, [NOW - timedelta(minutes=m) for m in range(60)])
    _log(key.key.pk, [NOW - timedelta(days=d) for d in range(2, 25)])
    with CaptureQueriesContext(connection) as queries:
        page, cursor = requests_page(
            key.key.workspace_id, LogFilters(key_id=key.key.pk), limit=50, now=NOW
        )
    assert len(page) == 50 and cursor is not None
    assert len(queries) == 1
    assert '"request_log"."at" >=' in queries[0]["sql"]
    with connection.cursor() as plan:
        plan.execute("EXPLAIN " + queries[0]["sql"])
        scanned = {
            row[0].split(" on ")[1].split()[0]
            for row in plan.fetchall()
            if " on request_log_p" in row[0]
        }
    assert scanned and scanned <= {
        "request_log_p20310309",
        "request_log_p20310310",
        "request_log_p20310311",
    }, scanned
