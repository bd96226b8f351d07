"""The usage flusher: counts added to their hourly and daily rows, and networks seen, with a
`key.new_network` audit event when a key is used from a network it has not used for 30 days.
Runs in the usage flush (apps/api/usage.py), never in a request."""

import logging
from collections import Counter
from datetime import datetime, timedelta

from django.db import IntegrityError, connection, transaction

from apps.api.usage import Gathered
from apps.api_keys.models import ApiKey
from apps.audit.services import Actor, audit_record

from .audit_actions import KEY_NEW_NETWORK
from .models import KeyNetwork, KeyUsageDay, KeyUsageHour

logger = logging.getLogger("apps.api")

# A network not used by a key for this long counts as new again.
NETWORK_FORGOTTEN_AFTER = timedelta(days=30)


BATCH_ROWS = 500  # rows per statement: 2,500 parameters, within SQLite's limit


def _add_counts(
    model: type[KeyUsageHour] | type[KeyUsageDay], column: str, rows: list[tuple[object, ...]]
) -> None:
    """Add each row's count to its row of `model`, creating it when missing. Each row is an
    atomic add, so concurrent flushes of several processes never lose a count; up to 500 rows
    go in one statement (the rows are distinct: they come from one Counter)."""
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor:
        for start in range(0, len(rows), BATCH_ROWS):
            batch = rows[start : start + BATCH_ROWS]
            values = ", ".join(["(%s, %s, %s, %s, %s)"] * len(batch))
            cursor.execute(
                f"INSERT INTO {table} (key_id, {column}, operation, outcome, count) "  # noqa: S608
                f"VALUES {values} ON CONFLICT (key_id, {column}, operation, outcome) "
                f"DO UPDATE SET count = {table}.count + excluded.count",
                [value for row in batch for value in row],  # type: ignore[misc]
            )


def write_counts(counts: Counter[tuple[int, datetime, str, str]]) -> None:
    """Add the gathered counts to the hourly and daily rows (keys deleted meanwhile skipped)."""
    live = set(
        ApiKey.objects.filter(pk__in={key for key, *_ in counts}).values_list("pk", flat=True)
    )
    hours: Counter[tuple[int, datetime, str, str]] = Counter()
    days: Counter[tuple[int, datetime, str, str]] = Counter()
    for (key_id, hour, operation, outcome), count in counts.items():
        if key_id in live:
            hours[(key_id, hour, operation, outcome)] += count
            days[(key_id, hour.date(), operation, outcome)] += count  # type: ignore[index]
    ops = connection.ops
    with transaction.atomic():
        _add_counts(
            KeyUsageHour,
            "hour",
            [(k, ops.adapt_datetimefield_value(h), o, r, c) for (k, h, o, r), c in hours.items()],
        )
        _add_counts(
            KeyUsageDay,
            "day",
            [(k, ops.adapt_datefield_value(d), o, r, c) for (k, d, o, r), c in days.items()],
        )


def write_networks(networks: dict[tuple[int, str], tuple[datetime, str]]) -> None:
    """Record the networks seen; audit a key's use from a network it has not used for 30 days
    (its very first network is its first use, audited as such)."""
    keys = ApiKey.objects.filter(pk__in={key for key, _ in networks}).select_related(
        "workspace", "user"
    )
    by_id = {key.pk: key for key in keys}
    for (key_id, network), (seen, address) in networks.items():
        key = by_id.get(key_id)
        if key is None:
            continue
        try:
            with transaction.atomic():
                _write_network(key, network, seen, address)
        except IntegrityError:  # another process recorded it at the same moment
            continue


def _write_network(key: ApiKey, network: str, seen: datetime, address: str) -> None:
    row = KeyNetwork.objects.select_for_update().filter(key=key, network=network).first()
    if row is None:
        known_elsewhere = KeyNetwork.objects.filter(key=key).exists()
        KeyNetwork.objects.create(
            key=key, network=network, first_seen=seen, last_seen=seen, last_address=address
        )
        new = known_elsewhere
    else:
        new = seen - row.last_seen >= NETWORK_FORGOTTEN_AFTER
        if seen > row.last_seen:
            row.last_seen, row.last_address = seen, address
            row.save(update_fields=["last_seen", "last_address"])
    if new:
        audit_record(
            workspace=key.workspace,
            action=KEY_NEW_NETWORK,
            actor=Actor.of_key(key, address),
            key=key,
            subject=f"{key.name} ({key.hint})",
            data={"network": network, "address": address},
        )


def write_counts_and_networks(gathered: Gathered) -> None:
    """The usage app's part of a usage flush."""
    if gathered.counts:
        write_counts(gathered.counts)
    if gathered.networks:
        write_networks(gathered.networks)
