"""The request log from Redis to PostgreSQL, each batch once (apps/metering/batches.py).

A batch holds, in the order they came: entries pushed as their request began (`P<status>|…`,
by the limiter's script), whole entries (`F|…`), and completions (`C|…`: the status, error,
duration and operation only the answer knows). A completion whose entry is in the batch is
applied before the rows are written; one whose entry was moved in an earlier batch updates
that row. An entry whose completion never came (its app process was killed while answering)
keeps the status it began with and no duration.
"""

import json
import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.metering.batches import batch_move, batches_sweep
from apps.metering.records import REDIS_REQUESTS, RequestEntry, entry_of_fields

from .models import RequestLogEntry, RequestLogMove
from .recording import entries_write

logger = logging.getLogger("apps.api")

BATCH_PREFIX = "gatehouse:requests:batch:"
MOVES_KEPT = timedelta(days=2)

Completion = tuple[int, str, float, str, str]  # status, error, duration, operation, object id


def request_log_move() -> int:
    """Move the request log waiting in Redis to PostgreSQL; how many entries it wrote."""
    if not settings.REDIS_URL:
        return 0
    return batch_move(REDIS_REQUESTS, BATCH_PREFIX, _read, _write)


def request_log_move_all(now: float | None = None) -> int:
    """The minute job: move what waits, and every batch a dead mover left behind."""
    if not settings.REDIS_URL:
        return 0
    return request_log_move() + batches_sweep(BATCH_PREFIX, _read, _write, now)


def _read(client: Any, name: str) -> tuple[list[RequestEntry], dict[str, Completion]]:
    entries: dict[str, RequestEntry] = {}
    completions: dict[str, Completion] = {}
    for raw in client.lrange(name, 0, -1):
        item = raw.decode() if isinstance(raw, bytes) else raw
        kind, _, body = item.partition("|")
        try:
            fields = json.loads(body)
            if kind.startswith("P"):
                entry = entry_of_fields(fields, status=int(kind[1:]))
                entries[entry.request_id] = entry
            elif kind == "F":
                entry = entry_of_fields(fields)
                entries[entry.request_id] = entry
            elif kind == "C":
                request_id, status, error, duration, operation, object_id = fields
                completions[str(request_id)] = (
                    int(status),
                    str(error),
                    float(duration),
                    str(operation),
                    str(object_id),
                )
            else:
                raise ValueError(kind)
        except (ValueError, TypeError):
            logger.warning("A request log item in Redis is not ours: %r", item[:200])
    done = []
    for request_id, entry in entries.items():
        completion = completions.pop(request_id, None)
        if completion is not None:
            status, error, duration, operation, object_id = completion
            entry = entry._replace(
                operation=operation,
                status=status,
                error=error,
                duration_ms=duration,
                object_id=object_id,
            )
        done.append(entry)
    return done, completions


def _write(batch: str, contents: tuple[list[RequestEntry], dict[str, Completion]]) -> int:
    entries, completions = contents
    with transaction.atomic():
        _move, created = RequestLogMove.objects.get_or_create(batch=batch)
        if not created:
            return 0
        written = entries_write(entries)
        for request_id, (status, error, duration, operation, object_id) in completions.items():
            # Its entry came in an earlier batch (the entry's process answered after a move).
            RequestLogEntry.objects.filter(request_id=request_id).update(
                status=status,
                error=error,
                duration_ms=duration,
                operation=operation,
                object_id=object_id,
            )
    return written


def request_log_moves_prune() -> int:
    """Forget moved batches older than two days."""
    deleted, _ = RequestLogMove.objects.filter(moved_at__lt=timezone.now() - MOVES_KEPT).delete()
    return deleted
