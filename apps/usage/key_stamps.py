"""The usage flush's part for keys: their last uses and the stamps of what they exercised,
many keys in one statement (with 10,000 keys in use, one UPDATE a flush instead of one per
key). The request only gathers them (apps/api_keys/verification.py)."""

import json
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection

from apps.api_keys.models import ApiKey
from apps.api_keys.verification import api_key_record_use
from apps.common.batch_sql import batches, rows_table
from apps.metering.buffer import Gathered

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


def write_key_uses(gathered: Gathered) -> None:
    """The usage flusher of keys: the last uses, the old secrets' uses and the stamps gathered,
    each written only when due. Routine last uses and all stamps go in a few statements for
    many keys, without loading them; a first use (audited) or a use of a rolling key's old
    secret loads its key and goes through api_key_record_use."""
    routine = []
    special = {}
    for key_id, (now, ip, previous, first) in gathered.last_use.items():
        if first or previous:
            special[key_id] = (now, ip, previous)
        else:
            routine.append((key_id, now, ip))
    if routine:
        stamp_last_uses(routine)
    if special:
        for key in ApiKey.objects.filter(pk__in=special).select_related("workspace", "user"):
            now, ip, previous = special[key.pk]
            key.called_with_previous_secret = previous
            api_key_record_use(key, ip=ip, now=now)
    by_field: dict[str, dict[int, dict[str, str]]] = {}
    for (key_id, field, name), at in gathered.stamps.items():
        by_field.setdefault(field, {}).setdefault(key_id, {})[name] = at.isoformat()
    for field, stamps in by_field.items():
        merge_stamps(field, stamps)
