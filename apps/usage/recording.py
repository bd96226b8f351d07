"""The usage flusher: counts added to their hourly rows, and networks seen, with a
`key.new_network` audit event when a key is used from a network it has not used for 30 days
(coalesced past five an hour: `_audit_new_networks`). Runs in the usage flush
(apps/metering/buffer.py), never in a request. Every write is a statement for many rows, so a
flush for 10,000 keys costs a few dozen statements, not tens of thousands."""

import logging
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, models, transaction
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.audit.models import AuditEvent
from apps.audit.services import Actor, audit_record
from apps.common.batch_sql import batches, rows_table
from apps.metering.buffer import Gathered

from .audit_actions import KEY_NEW_NETWORK, KEY_NEW_NETWORKS
from .models import KeyNetwork, KeyUsageHour

logger = logging.getLogger("apps.api")

# A network not used by a key for this long counts as new again.
NETWORK_FORGOTTEN_AFTER = timedelta(days=30)
# New networks a key is audited for one by one within an hour; past that, one summary event
# for the rest, then none for the key until an hour after it (docs/security.md). A key used
# from hundreds of networks at once would otherwise write hundreds of events and webhooks.
NEW_NETWORK_EVENTS_PER_WINDOW = 5
NEW_NETWORK_WINDOW = timedelta(hours=1)
NETWORKS_NAMED_IN_SUMMARY = 20

Count = tuple[int, datetime, str, str, int]  # key id, hour, operation, outcome, count


def write_counts(counts: Counter[tuple[int, datetime, str, str]]) -> None:
    """Add the gathered counts to their hourly rows (keys deleted meanwhile skipped), each an
    atomic add, so concurrent flushes of several processes never lose a count. Only hours:
    finished days are rolled up into daily rows by the daily job. Rows go in key order, so two
    processes flushing the same keys take their row locks in the same order.

    A negative count is a correction of a count already written (with Redis, a request is
    counted as it began and corrected once answered): it is taken from its row, never below 0.
    """
    rows = sorted((*group, count) for group, count in counts.items() if count > 0)
    corrections = sorted((*group, count) for group, count in counts.items() if count < 0)
    with transaction.atomic():
        if rows and connection.vendor == "postgresql":
            _add_counts_postgresql(rows)
        elif rows:
            _add_counts(rows)
        if corrections:
            _take_counts(corrections)


def _take_counts(rows: list[Count]) -> None:
    """Subtract the corrections from their rows (a row that is not there has nothing to take)."""
    table = connection.ops.quote_name(KeyUsageHour._meta.db_table)
    adapt = connection.ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        for key_id, hour, operation, outcome, count in rows:
            cursor.execute(
                f"UPDATE {table} SET count = CASE WHEN count + %s > 0 "  # noqa: S608
                "THEN count + %s ELSE 0 END "
                "WHERE key_id = %s AND hour = %s AND operation = %s AND outcome = %s",
                [count, count, key_id, adapt(hour), operation, outcome],
            )


def _add_counts_postgresql(rows: list[Count]) -> None:
    """One statement with five array parameters, joined to the keys that still exist."""
    table = connection.ops.quote_name(KeyUsageHour._meta.db_table)
    keys = connection.ops.quote_name(ApiKey._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (key_id, hour, operation, outcome, count) "  # noqa: S608
            "SELECT u.key_id, u.hour, u.operation, u.outcome, u.count FROM unnest("
            "%s::bigint[], %s::timestamptz[], %s::text[], %s::text[], %s::bigint[]) "
            f"AS u (key_id, hour, operation, outcome, count) JOIN {keys} k ON k.id = u.key_id "
            "ORDER BY 1, 2, 3, 4 "
            "ON CONFLICT (key_id, hour, operation, outcome) "
            f"DO UPDATE SET count = {table}.count + excluded.count",
            [list(column) for column in zip(*rows, strict=True)],
        )


def _add_counts(rows: list[Count]) -> None:
    table = connection.ops.quote_name(KeyUsageHour._meta.db_table)
    live = set(ApiKey.objects.filter(pk__in={row[0] for row in rows}).values_list("pk", flat=True))
    adapt = connection.ops.adapt_datetimefield_value
    adapted = [(k, adapt(h), o, r, c) for k, h, o, r, c in rows if k in live]
    with connection.cursor() as cursor:
        for batch in batches(adapted, 5):
            cursor.execute(
                f"INSERT INTO {table} (key_id, hour, operation, outcome, count) "  # noqa: S608
                f"VALUES {', '.join(['(%s, %s, %s, %s, %s)'] * len(batch))} "
                "ON CONFLICT (key_id, hour, operation, outcome) "
                f"DO UPDATE SET count = {table}.count + excluded.count",
                [value for row in batch for value in row],
            )


SEEN = (
    ("kid", "bigint"),
    ("net", "text"),
    ("seen", "timestamptz"),
    ("address", "inet"),
    ("forgotten", "timestamptz"),
)


def write_networks(networks: dict[tuple[int, str], tuple[datetime, str]]) -> None:
    """Record the networks seen; audit a key's use from a network it has not used for 30 days
    (its very first network is its first use, audited as such). Whether a network is new is
    decided by the statement that writes it, so two processes never both call it new."""
    live = set(
        ApiKey.objects.filter(pk__in={key for key, _ in networks}).values_list("pk", flat=True)
    )
    seen = sorted(
        (key_id, network, at, address)
        for (key_id, network), (at, address) in networks.items()
        if key_id in live
    )
    for batch in batches(seen, len(SEEN)):
        with transaction.atomic():  # the audit events in the transaction of their rows
            new = _write_networks(batch)
            if new:
                _audit_new_networks(new)


def _write_networks(
    batch: Sequence[tuple[int, str, datetime, str]],
) -> list[tuple[int, str, datetime, str]]:
    table = connection.ops.quote_name(KeyNetwork._meta.db_table)
    adapt = connection.ops.adapt_datetimefield_value
    used_before = set(
        KeyNetwork.objects.filter(key_id__in={row[0] for row in batch}).values_list(
            "key_id", flat=True
        )
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (key_id, network, first_seen, last_seen, last_address) "  # noqa: S608
            f"VALUES {', '.join(['(%s, %s, %s, %s, %s)'] * len(batch))} "
            "ON CONFLICT (key_id, network) DO NOTHING RETURNING key_id, network",
            [v for k, n, at, ip in batch for v in (k, n, adapt(at), adapt(at), ip)],
        )
        inserted = {(k, n) for k, n in cursor.fetchall()}
        params: list[Any] = []
        for k, n, at, ip in batch:
            params += [k, n, adapt(at), ip, adapt(at - NETWORK_FORGOTTEN_AFTER)]
        source = rows_table(batch, SEEN)
        update = (
            f"UPDATE {table} SET last_seen = v.seen, last_address = v.address "  # noqa: S608
            f"FROM {source} WHERE {table}.key_id = v.kid AND {table}.network = v.net AND "
        )
        cursor.execute(
            update + f"{table}.last_seen <= v.forgotten RETURNING key_id, network", params
        )
        forgotten = {(k, n) for k, n in cursor.fetchall()}
        cursor.execute(update + f"{table}.last_seen < v.seen", params)
    return [
        row
        for row in batch
        if (row[:2] in inserted and row[0] in used_before) or row[:2] in forgotten
    ]


def _audit_new_networks(new: list[tuple[int, str, datetime, str]]) -> None:
    """One `key.new_network` event per new network, up to five a key in an hour; the rest of
    them in one `key.new_networks` event (the same webhook type, naming up to 20 and how many),
    after which the key's new networks are audited in no event until an hour has passed. The
    networks themselves are all recorded (the key's page lists them)."""
    keys = ApiKey.objects.filter(pk__in={row[0] for row in new}).select_related("workspace", "user")
    by_id = {key.pk: key for key in keys}
    now = timezone.now()
    by_key: dict[int, list[tuple[str, str]]] = {}
    for key_id, network, _at, address in new:
        by_key.setdefault(key_id, []).append((network, address))
    for key_id in sorted(by_key):
        key, networks = by_id[key_id], by_key[key_id]
        _lock_key_networks(key_id)  # two servers' flushes of one key count one window
        recent = dict(
            AuditEvent.objects.filter(
                key_id=key_id,
                action__in=(KEY_NEW_NETWORK, KEY_NEW_NETWORKS),
                created_at__gt=now - NEW_NETWORK_WINDOW,
            )
            .order_by()
            .values_list("action")
            .annotate(n=models.Count("id"))
        )
        if recent.get(KEY_NEW_NETWORKS):
            continue  # summarised within the hour: quiet until the hour has passed
        room = max(NEW_NETWORK_EVENTS_PER_WINDOW - recent.get(KEY_NEW_NETWORK, 0), 0)
        for network, address in networks[:room]:
            _audit(key, KEY_NEW_NETWORK, address, {"network": network, "address": address})
        rest = networks[room:]
        if rest:
            quiet_until = now + NEW_NETWORK_WINDOW
            data = {
                "network": rest[0][0],
                "address": rest[0][1],
                "networkCount": len(rest),
                "networks": [network for network, _ in rest[:NETWORKS_NAMED_IN_SUMMARY]],
                "quietUntil": quiet_until.isoformat().replace("+00:00", "Z"),
            }
            _audit(key, KEY_NEW_NETWORKS, rest[0][1], data)


def _audit(key: ApiKey, action: str, address: str, data: dict[str, Any]) -> None:
    audit_record(
        workspace=key.workspace,
        action=action,
        actor=Actor.of_key(key, address),
        key=key,
        subject=f"{key.name} ({key.hint})",
        data=data,
    )


def _lock_key_networks(key_id: int) -> None:
    """On PostgreSQL, hold a lock on this key's new-network events until the transaction ends
    (SQLite writes one transaction at a time anyway)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended('key.new_network', %s))", [key_id]
            )


def write_counts_and_networks(gathered: Gathered) -> None:
    """The usage app's part of a usage flush."""
    if gathered.counts:
        write_counts(gathered.counts)
    if gathered.networks:
        write_networks(gathered.networks)
