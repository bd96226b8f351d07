"""Usage counting against a live server: exact totals after a flush, under concurrent requests
(SQLite and PostgreSQL alike), a key's new network, and pruning."""

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import httpx
import pytest
import time_machine
from django.db.models import Sum
from django.utils import timezone

from apps.api_keys.restrictions import Restrictions
from apps.audit.models import AuditEvent
from apps.metering.buffer import usage_flush
from apps.usage.models import KeyNetwork, KeyUsageDay, KeyUsageHour
from apps.usage.reading import daily_rows
from apps.usage.services import usage_prune, usage_roll_up
from tests.factories import make_key

pytestmark = pytest.mark.django_db(transaction=True)


def totals(key_id: int, model=KeyUsageHour) -> dict[tuple[str, str], int]:
    rows = model.objects.filter(key_id=key_id).values("operation", "outcome")
    return {(r["operation"], r["outcome"]): r["total"] for r in rows.annotate(total=Sum("count"))}


def test_concurrent_requests_are_counted_exactly_by_operation_and_outcome(live_server, settings):
    settings.USAGE_FLUSH_SECONDS = 3600  # gathered in memory; the test flushes
    busy = make_key(scopes=["pages:read"])
    limited = make_key(scopes=["pages:read"], restrictions=Restrictions(rate_limit_per_minute=5))
    headers = {"Authorization": f"Bearer {busy.secret}"}

    def hit(path: str) -> int:
        return httpx.get(f"{live_server.url}/api/v1{path}", headers=headers, timeout=10).status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        codes = list(pool.map(hit, ["/workspace"] * 120 + ["/pages"] * 40 + ["/products"] * 20))
    assert codes.count(200) == 160 and codes.count(403) == 20
    limited_codes = [
        httpx.get(
            f"{live_server.url}/api/v1/pages",
            headers={"Authorization": f"Bearer {limited.secret}"},
            timeout=10,
        ).status_code
        for _ in range(8)
    ]
    assert limited_codes == [200] * 5 + [429] * 3
    mcp = {
        "Authorization": f"Bearer {busy.secret}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    call["params"] = {"name": "get_workspace", "arguments": {}}
    for _ in range(6):
        assert httpx.post(f"{live_server.url}/mcp", json=call, headers=mcp).status_code == 200
    assert not KeyUsageHour.objects.exists()  # nothing written by the requests themselves

    usage_flush()
    assert totals(busy.key.pk) == {
        ("get_workspace", "2xx"): 120,
        ("list_pages", "2xx"): 40,
        ("list_products", "403"): 20,
        ("mcp:get_workspace", "2xx"): 6,
    }
    assert totals(limited.key.pk) == {("list_pages", "2xx"): 5, ("list_pages", "429"): 3}
    assert not KeyUsageDay.objects.exists()  # days are rolled up by the daily job
    # A second flush adds to the same rows, never replaces them.
    for _ in range(3):
        hit("/workspace")
    usage_flush()
    assert totals(busy.key.pk)[("get_workspace", "2xx")] == 123


def test_a_key_used_from_a_new_network_is_audited_once(live_server):
    created = make_key(scopes=["pages:read"])

    def from_address(address: str) -> None:
        from django.test import Client

        client = Client(HTTP_AUTHORIZATION=f"Bearer {created.secret}", REMOTE_ADDR=address)
        assert client.get("/api/v1/workspace").status_code == 200

    start = timezone.now()
    with time_machine.travel(start, tick=False):
        from_address("192.0.2.10")  # its first network: its first use, not a new network
        from_address("192.0.2.99")  # the same /24
    assert not AuditEvent.objects.filter(action="key.new_network").exists()
    with time_machine.travel(start + timedelta(hours=1), tick=False):
        from_address("198.51.100.7")
        from_address("2001:db8:1:2::5")
    events = AuditEvent.objects.filter(action="key.new_network").order_by("id")
    assert [e.data["network"] for e in events] == ["198.51.100.0/24", "2001:db8:1:2::/64"]
    assert events[0].data["address"] == "198.51.100.7" and events[0].ip == "198.51.100.7"
    from apps.metering.requests import metering_reset as usage_reset

    usage_reset()  # another process: the network is queued again, and the database decides
    with time_machine.travel(start + timedelta(days=20), tick=False):
        from_address("198.51.100.8")
    assert AuditEvent.objects.filter(action="key.new_network").count() == 2
    usage_reset()
    with time_machine.travel(start + timedelta(days=31), tick=False):
        from_address("192.0.2.10")  # not used from there for 31 days: new again
    assert AuditEvent.objects.filter(action="key.new_network").count() == 3
    assert KeyNetwork.objects.filter(key=created.key).count() == 3


def test_pruning_keeps_90_days_of_hours_and_13_months_of_days(db):
    key = make_key().key
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    for age in (89, 91):
        KeyUsageHour.objects.create(
            key=key, hour=now - timedelta(days=age), operation="x", outcome="2xx", count=1
        )
    for age in (390, 400):
        KeyUsageDay.objects.create(
            key=key, day=(now - timedelta(days=age)).date(), operation="x", outcome="2xx", count=1
        )
    pruned = usage_prune(now)
    assert (pruned.hours, pruned.days) == (1, 1)
    assert KeyUsageHour.objects.get().hour == now - timedelta(days=89)
    assert KeyUsageDay.objects.get().day == (now - timedelta(days=390)).date()
    assert usage_prune(now) == type(pruned)(0, 0, 0)  # idempotent


def test_finished_days_are_rolled_up_from_their_hours_and_read_the_same(db):
    key = make_key().key
    now = timezone.now().replace(hour=12, minute=0, second=0, microsecond=0)
    today = now.date()
    for hours_ago, outcome, count in [
        (1, "2xx", 5),
        (13, "2xx", 7),
        (14, "429", 2),
        (40, "2xx", 3),
    ]:
        KeyUsageHour.objects.create(
            key=key,
            hour=now - timedelta(hours=hours_ago),
            operation="x",
            outcome=outcome,
            count=count,
        )

    def by_day() -> dict:
        rows = daily_rows(("day", "outcome"), today - timedelta(days=5), today, key=key)
        return {(r["day"], r["outcome"]): r["total"] for r in rows}

    one, two = timedelta(days=1), timedelta(days=2)
    expected = {(today, "2xx"): 5, (today - one, "2xx"): 7, (today - one, "429"): 2}
    expected[(today - two, "2xx")] = 3
    assert by_day() == expected
    assert usage_roll_up(now) == [today - two, today - one]  # finished days, never today
    assert {(d.day, d.outcome): d.count for d in KeyUsageDay.objects.all()} == {
        k: v for k, v in expected.items() if k[0] < today
    }
    # Read from the daily rows now: a change to a rolled-up day's hours shows only once the
    # day is rolled again, which the next run does for the last rolled-up day.
    KeyUsageHour.objects.filter(hour=now - timedelta(hours=13)).update(count=8)
    assert by_day() == expected
    assert usage_roll_up(now + one) == [today - one, today]
    assert by_day() == {**expected, (today - one, "2xx"): 8}
    assert usage_roll_up(now + one) == [today]  # the last rolled-up day again, the same rows
    assert KeyUsageDay.objects.count() == 4
    # Today is read from its hours even with daily rows for it (the flush of old versions
    # wrote them as it went): they may be partial.
    KeyUsageHour.objects.filter(hour=now - timedelta(hours=1)).update(count=6)
    assert by_day() == {**expected, (today - one, "2xx"): 8, (today, "2xx"): 6}


def test_the_prune_command_rolls_up_and_says_what_it_deleted(db):
    from io import StringIO

    from django.core.management import call_command

    key = make_key().key
    KeyUsageHour.objects.create(
        key=key, hour=timezone.now() - timedelta(days=100), operation="x", outcome="2xx", count=1
    )
    KeyUsageHour.objects.create(
        key=key, hour=timezone.now() - timedelta(days=2), operation="x", outcome="2xx", count=1
    )
    out = StringIO()
    call_command("pruneusage", stdout=out)
    assert out.getvalue().strip().splitlines() == [
        "Deleted 1 hourly and 0 daily usage rows, and 0 networks not seen for 13 months.",
        "Rolled up 2 finished days into daily usage rows.",
    ]


def test_a_flush_skips_keys_deleted_since_their_requests_and_keeps_the_rest(db):
    from collections import Counter

    from apps.usage.recording import write_counts, write_networks

    kept, gone = make_key().key, make_key().key
    hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    counts = Counter({(kept.pk, hour, "x", "2xx"): 3, (gone.pk, hour, "x", "2xx"): 4})
    networks = {(k.pk, "192.0.2.0/24"): (hour, "192.0.2.1") for k in (kept, gone)}
    gone_id = gone.pk
    gone.delete()
    write_counts(counts)
    write_networks(networks)
    assert list(KeyUsageHour.objects.values_list("key_id", "count")) == [(kept.pk, 3)]
    assert list(KeyNetwork.objects.values_list("key_id", flat=True)) == [kept.pk]
    assert gone_id != kept.pk


@pytest.mark.django_db(transaction=True)
def test_the_flushing_thread_holds_no_connection_between_flushes(settings):
    """One database connection per app process: the request thread's. The thread that writes
    usage every few seconds closes its own after each write, whatever CONN_MAX_AGE says."""
    import threading

    from django.db import connections

    from apps.metering import buffer as usage

    settings.DATABASES["default"]["CONN_MAX_AGE"] = 600
    created = make_key()
    held: list[object] = []

    def flush_in_the_flushing_thread() -> None:
        hour = timezone.now().replace(minute=0, second=0, microsecond=0)
        usage.add(lambda gathered: gathered.counts.update({(created.key.pk, hour, "x", "2xx"): 1}))
        usage.usage_flush()
        held.append(connections["default"].connection)

    worker = threading.Thread(target=flush_in_the_flushing_thread, name="usage-flush")
    worker.start()
    worker.join()
    assert held == [None]
    from apps.usage.models import KeyUsageHour

    assert KeyUsageHour.objects.filter(key=created.key).exists()  # and it did write
