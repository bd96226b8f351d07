"""The request log's days on PostgreSQL: one partition a day, made before its first row, dropped
whole once it is past `REQUEST_LOG_DAYS`. Plain SQL rather than a library: django-postgres-extra
partitions through its own database backend (every connection of the project would change for
one table), and what the log needs is two statements a day.

A partition is named `request_log_p20261126` and holds [that day 00:00 UTC, the next day).
"""

import functools
from datetime import UTC, date, datetime, timedelta

from django.db import DatabaseError, connection, transaction

PARENT = "request_log"


def partition_name(day: date) -> str:
    return f"{PARENT}_p{day:%Y%m%d}"


def _bounds(day: date) -> tuple[str, str]:
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return start.isoformat(), (start + timedelta(days=1)).isoformat()


_made: set[date] = set()  # days this process knows have their partition
# Making a partition takes a lock on the whole log that waits behind any open read of it (a
# long Logs export), and every read and write would queue behind the CREATE: it waits this long
# at most, and the entries wait for the next flush instead (issue 53).
LOCK_TIMEOUT = "2s"


class PartitionBusy(Exception):
    """A day's partition could not be made now: the log was locked by a long read."""


def partitions_ensure(days: set[date]) -> None:
    """Make the partitions of `days` that do not exist yet (PostgreSQL; elsewhere nothing)."""
    if connection.vendor != "postgresql":
        return
    missing = sorted(days - _made)
    if not missing:
        return
    for day in missing:
        start, end = _bounds(day)
        try:
            # In a savepoint: another process making the same day at the same moment can
            # still collide on the catalog's own unique index; that day exists then.
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
                cursor.execute(
                    f'CREATE TABLE IF NOT EXISTS "{partition_name(day)}" PARTITION OF "{PARENT}" '
                    f"FOR VALUES FROM ('{start}') TO ('{end}')"
                )
        except DatabaseError as error:
            if day in partitions_existing():
                continue  # made by another process at the same moment
            if getattr(error.__cause__, "sqlstate", None) == "55P03":  # lock_not_available
                raise PartitionBusy(f"the request log is locked; {day} waits") from error
            raise
        # Known made once it is committed: a rolled-back transaction takes the table with it.
        transaction.on_commit(functools.partial(_made.add, day))


def partitions_existing() -> list[date]:
    """The days that have a partition, oldest first."""
    if connection.vendor != "postgresql":
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = %s",
            [PARENT],
        )
        names = [row[0] for row in cursor.fetchall()]
    prefix = f"{PARENT}_p"
    days = []
    for name in names:
        if name.startswith(prefix):
            try:
                days.append(datetime.strptime(name[len(prefix) :], "%Y%m%d").date())
            except ValueError:
                continue
    return sorted(days)


def partitions_drop_before(first_kept: date) -> list[date]:
    """Drop every day's partition before `first_kept`; the days dropped."""
    dropped = [day for day in partitions_existing() if day < first_kept]
    with connection.cursor() as cursor:
        for day in dropped:
            cursor.execute(f'DROP TABLE IF EXISTS "{partition_name(day)}"')
            _made.discard(day)
    return dropped


def partitions_forget() -> None:
    """Forget which partitions this process made (for tests that drop tables)."""
    _made.clear()
