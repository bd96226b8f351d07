"""Many keys' last-use stamps in one statement, for the usage flush: with 10,000 keys in use,
one UPDATE a flush instead of one per key."""

import json
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection

from apps.common.batch_sql import batches, rows_table

from .models import ApiKey

COLUMNS = (("id", "bigint"), ("at", "timestamptz"), ("stale", "timestamptz"), ("ip", "inet"))


def stamp_last_uses(uses: list[tuple[int, datetime, str | None]]) -> None:
    """Write (key id, time, address) as each key's last use, only where the stored stamp is at
    least the interval old (so concurrent flushes write a key at most once a minute). For keys
    used before: a first use, with its audit event, goes through api_key_record_use."""
    interval = timedelta(seconds=settings.API_KEY_LAST_USED_INTERVAL_SECONDS)
    table = connection.ops.quote_name(ApiKey._meta.db_table)
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        for batch in batches(uses, len(COLUMNS)):
            params: list[Any] = []
            for key_id, at, ip in batch:
                params += [key_id, adapt(at), adapt(at - interval), ip]
            cursor.execute(
                f"UPDATE {table} SET last_used_at = v.at, last_used_ip = v.ip "  # noqa: S608
                f"FROM {rows_table(batch, COLUMNS)} "
                f"WHERE {table}.id = v.id AND {table}.last_used_at <= v.stale",
                params,
            )


STAMP_COLUMNS = (("id", "bigint"), ("stamps", "jsonb"))
STAMP_FIELDS = ("scope_last_used", "object_last_used")


def merge_stamps(field: str, stamps: dict[int, dict[str, str]]) -> None:
    """Merge each key's {name: ISO time} into its JSON map `field` ("scope_last_used" or
    "object_last_used"), a statement for hundreds of keys. Only due stamps are gathered (the
    request read the map), so a merge only moves a stamp forward, give or take the seconds
    between two processes' flushes."""
    if field not in STAMP_FIELDS:
        raise ValueError(f"not a stamp field: {field}")
    table = connection.ops.quote_name(ApiKey._meta.db_table)
    column = f"{table}.{connection.ops.quote_name(field)}"
    merged = (
        f"COALESCE({column}, '{{}}'::jsonb) || v.stamps"
        if connection.vendor == "postgresql"
        else f"json_patch(COALESCE({column}, '{{}}'), v.stamps)"
    )
    rows = sorted(stamps.items())
    with connection.cursor() as cursor:
        for batch in batches(rows, len(STAMP_COLUMNS)):
            cursor.execute(
                f"UPDATE {table} SET {connection.ops.quote_name(field)} = {merged} "  # noqa: S608
                f"FROM {rows_table(batch, STAMP_COLUMNS)} WHERE {table}.id = v.id",
                [value for key_id, names in batch for value in (key_id, json.dumps(names))],
            )
