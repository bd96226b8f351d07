"""Writing the request log: entries gathered by the usage flush (apps/metering/buffer.py) in one
`COPY` on PostgreSQL (a multi-row insert elsewhere), the partitions of their days made first."""

import json
import logging
from collections.abc import Iterable
from datetime import UTC
from typing import Any

import psycopg
from django.db import IntegrityError, connection, transaction

from apps.api_keys.models import ApiKey
from apps.metering.buffer import Gathered, add
from apps.metering.records import (
    REQUEST_LOG_COLUMNS,
    RequestEntry,
    entry_for_columns,
    entry_of_fields,
)

from .models import RequestLogEntry
from .partitions import PartitionBusy, partitions_ensure, partitions_forget

logger = logging.getLogger("apps.request_log")


def entries_write(entries: Iterable[RequestEntry]) -> int:
    """Write the entries of keys that still exist, each with its key's workspace; how many."""
    entries = list(entries)
    if not entries:
        return 0
    workspaces = dict(
        ApiKey.objects.filter(pk__in={entry.key_id for entry in entries}).values_list(
            "pk", "workspace_id"
        )
    )
    rows = [entry_for_columns(entry) for entry in entries if entry.key_id in workspaces]
    if not rows:
        return 0
    days = {entry.at.astimezone(UTC).date() for entry in rows}
    partitions_ensure(days)
    if connection.vendor == "postgresql":
        try:
            with transaction.atomic():
                _copy(rows, workspaces)
        except (IntegrityError, psycopg.errors.CheckViolation):
            # A day's partition dropped behind this process's back ("no partition of relation
            # found for row"): the COPY runs on psycopg's own cursor, so its error is psycopg's.
            partitions_forget()
            partitions_ensure(days)
            _copy(rows, workspaces)
    else:
        RequestLogEntry.objects.bulk_create(
            [
                RequestLogEntry(**entry._asdict(), workspace_id=workspaces[entry.key_id])
                for entry in rows
            ],
            batch_size=500,
        )
    return len(rows)


def _copy(rows: list[RequestEntry], workspaces: dict[int, Any]) -> None:
    columns = ", ".join(f'"{name}"' for name in (*REQUEST_LOG_COLUMNS, "workspace_id"))
    with connection.cursor() as cursor:
        raw = cursor.cursor  # psycopg's own cursor: COPY is not in the DB-API
        with raw.copy(f'COPY "request_log" ({columns}) FROM STDIN') as copy:
            for entry in rows:
                copy.write_row((*entry, workspaces[entry.key_id]))


def write_gathered(gathered: Gathered) -> None:
    """The request log's part of a usage flush: the buffer's entries, and whole entries that
    were to go to Redis while it was away."""
    entries = list(gathered.requests)
    for item in gathered.request_items:
        entries.append(entry_of_fields(json.loads(item[2:])))
    if entries:
        try:
            with transaction.atomic():
                entries_write(entries)
        except PartitionBusy:
            _keep_for_the_next_flush(entries)


# Entries kept in this process while the log cannot take them, at most this many (then the
# oldest go, logged): a lock held for hours must not fill the process's memory.
KEPT_AT_MOST = 100_000


def _keep_for_the_next_flush(entries: list[RequestEntry]) -> None:
    logger.warning("The request log is locked; %d entries wait for the next flush.", len(entries))

    def keep(gathered: Gathered) -> None:
        gathered.requests[:0] = entries
        if (extra := len(gathered.requests) - KEPT_AT_MOST) > 0:
            del gathered.requests[:extra]
            logger.error("The request log is locked too long: %d entries were dropped.", extra)

    add(keep)
