"""Many keys' last-use stamps in one statement, for the usage flush: with 10,000 keys in use,
one UPDATE a flush instead of one per key."""

from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection

from .models import ApiKey

BATCH_KEYS = 300  # four parameters a key: 1,200 a statement, within SQLite's limit


def stamp_last_uses(uses: list[tuple[int, datetime, str | None]]) -> None:
    """Write (key id, time, address) as each key's last use, only where the stored stamp is at
    least the interval old (so concurrent flushes write a key at most once a minute). For keys
    used before: a first use, with its audit event, goes through api_key_record_use."""
    interval = timedelta(seconds=settings.API_KEY_LAST_USED_INTERVAL_SECONDS)
    table = connection.ops.quote_name(ApiKey._meta.db_table)
    adapt = connection.ops.adapt_datetimefield_value
    postgres = connection.vendor == "postgresql"
    # PostgreSQL takes typed VALUES; SQLite (3.33 or newer) a SELECT of the rows.
    row = (
        "(%s::bigint, %s::timestamptz, %s::timestamptz, %s::inet)"
        if postgres
        else "SELECT %s AS id, %s AS at, %s AS stale, %s AS ip"
    )
    with connection.cursor() as cursor:
        for start in range(0, len(uses), BATCH_KEYS):
            batch = uses[start : start + BATCH_KEYS]
            if postgres:
                source = f"(VALUES {', '.join([row] * len(batch))}) AS v (id, at, stale, ip)"
            else:
                source = f"({' UNION ALL '.join([row] * len(batch))}) AS v"
            params: list[Any] = []
            for key_id, at, ip in batch:
                params += [key_id, adapt(at), adapt(at - interval), ip]
            cursor.execute(
                f"UPDATE {table} SET last_used_at = v.at, last_used_ip = v.ip "  # noqa: S608
                f"FROM {source} WHERE {table}.id = v.id AND {table}.last_used_at <= v.stale",
                params,
            )
