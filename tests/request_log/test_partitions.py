"""The request log's days on PostgreSQL: each day's partition exists before its first request,
the daily job drops the days past REQUEST_LOG_DAYS whole and touches nothing else; on SQLite
the daily job deletes the same days' rows."""

import io
from datetime import UTC, date, datetime, timedelta

import pytest
import time_machine
from django.db import connection

from apps.request_log.housekeeping import request_log_prune
from apps.request_log.models import RequestLogEntry
from apps.request_log.partitions import partitions_existing
from tests.conftest import auth
from tests.factories import make_key

pytestmark = pytest.mark.django_db(transaction=True)
DAY = date(2031, 3, 10)


def at(day: date, hour: int = 12, minute: int = 0, second: int = 0):
    return time_machine.travel(
        datetime(day.year, day.month, day.day, hour, minute, second, tzinfo=UTC), tick=False
    )


@pytest.mark.postgres
def test_partitions_are_made_ahead_and_expired_days_dropped_whole(client, settings):
    settings.REQUEST_LOG_DAYS = 3
    key = make_key(scopes=["pages:read"], expires_in=None)
    with at(DAY, 23, 59, 30):
        request_log_prune()
        assert {DAY, DAY + timedelta(days=1), DAY + timedelta(days=2)} <= set(partitions_existing())
        client.get("/api/v1/workspace", **auth(key.secret))
    with at(DAY + timedelta(days=1), 0, 0, 1):  # across midnight: tomorrow's partition is there
        client.get("/api/v1/workspace", **auth(key.secret))
    with at(DAY + timedelta(days=2)):
        client.get("/api/v1/workspace", **auth(key.secret))
    assert RequestLogEntry.objects.count() == 3
    with connection.cursor() as cursor:
        cursor.execute('SELECT count(*) FROM "request_log_p20310311"')
        assert cursor.fetchone()[0] == 1  # the row went to its own day

    with at(DAY + timedelta(days=3), 3):  # days kept: the 11th, 12th and 13th
        request_log_prune()
    days = partitions_existing()
    assert DAY not in days and min(
        d for d in days if d >= DAY - timedelta(days=30)
    ) >= DAY + timedelta(days=1)
    assert DAY + timedelta(days=5) in days  # two days ahead again
    kept = sorted(RequestLogEntry.objects.values_list("at", flat=True))
    assert [moment.date() for moment in kept] == [DAY + timedelta(days=1), DAY + timedelta(days=2)]


def test_on_any_database_the_daily_job_keeps_whole_days(client, settings):
    settings.REQUEST_LOG_DAYS = 2
    key = make_key(scopes=["pages:read"], expires_in=None)
    for offset in range(4):
        with at(DAY + timedelta(days=offset)):
            client.get("/api/v1/workspace", **auth(key.secret))
    with at(DAY + timedelta(days=3), 1):
        request_log_prune()
    days = sorted(m.date() for m in RequestLogEntry.objects.values_list("at", flat=True))
    assert days == [DAY + timedelta(days=2), DAY + timedelta(days=3)]


@pytest.mark.postgres
def test_a_day_s_partition_dropped_under_a_running_process_is_made_again_and_nothing_lost(
    client,
):
    key = make_key(scopes=["pages:read"], expires_in=None)
    day = DAY + timedelta(days=40)
    with at(day):
        client.get("/api/v1/workspace", **auth(key.secret))  # this process now knows the day
        with connection.cursor() as cursor:
            cursor.execute(f'DROP TABLE "request_log_p{day:%Y%m%d}"')
        for _ in range(3):
            assert client.get("/api/v1/workspace", **auth(key.secret)).status_code == 200
    assert RequestLogEntry.objects.filter(at__date=day).count() == 3


@pytest.mark.postgres
def test_a_partition_that_waits_behind_a_long_read_keeps_its_entries_for_the_next_flush(
    client, settings
):
    import threading

    from apps.metering.buffer import usage_flush
    from apps.request_log import partitions

    settings.USAGE_FLUSH_SECONDS = 3600  # flushed by hand below
    partitions.LOCK_TIMEOUT = "200ms"
    key = make_key(scopes=["pages:read"], expires_in=None)
    day = DAY + timedelta(days=50)
    reading, done = threading.Event(), threading.Event()

    def long_read() -> None:  # a Logs export: an open transaction reading the log
        from django.db import connections, transaction

        with transaction.atomic():
            with connections["default"].cursor() as cursor:
                cursor.execute('SELECT count(*) FROM "request_log"')
            reading.set()
            done.wait(30)
        connections.close_all()

    reader = threading.Thread(target=long_read)
    reader.start()
    try:
        reading.wait(10)
        with at(day):
            assert client.get("/api/v1/workspace", **auth(key.secret)).status_code == 200
            usage_flush()  # the partition cannot be made: the entry stays in this process
        assert RequestLogEntry.objects.filter(at__date=day).count() == 0
    finally:
        partitions.LOCK_TIMEOUT = "2s"
        done.set()
        reader.join()
    usage_flush()
    assert RequestLogEntry.objects.filter(at__date=day).count() == 1


@pytest.mark.postgres
def test_metrics_say_when_tomorrows_partition_is_missing_and_the_command_makes_it(client):
    from django.core.management import call_command

    from apps.request_log.partitions import partition_name, partitions_forget
    from tests.operations.test_metrics import sample, scrape

    later = DAY + timedelta(days=40)  # days no other test makes
    with at(later, 9):
        call_command("prunerequestlog", stdout=io.StringIO())
        assert sample(scrape(client), "gatehouse_request_log_tomorrow_partition") == 1
        with connection.cursor() as cursor:
            cursor.execute(f'DROP TABLE "{partition_name(later + timedelta(days=1))}"')
        partitions_forget()
        assert sample(scrape(client), "gatehouse_request_log_tomorrow_partition") == 0
        printed = io.StringIO()
        call_command("prunerequestlog", stdout=printed)
        assert printed.getvalue().startswith("Dropped ")
        assert sample(scrape(client), "gatehouse_request_log_tomorrow_partition") == 1


def test_the_partition_gauge_is_not_scraped_off_postgresql(client):
    from tests.operations.test_metrics import scrape

    if connection.vendor == "postgresql":
        pytest.skip("PostgreSQL has partitions")
    assert "gatehouse_request_log_tomorrow_partition" not in scrape(client)
