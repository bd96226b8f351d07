"""Counts from Redis to PostgreSQL, exactly once.

With Redis configured, every request's count is added to one Redis hash by the rate limiter's
script call (apps/metering/buffer.py). Each batch is moved once (apps/metering/batches.py), its
counts and a `UsageMove` row written in one transaction. App processes move in every usage
flush, so counts show within seconds; the job every minute is what guarantees it when no app
process is serving.
"""

import logging
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.metering.batches import batch_move, batches_sweep
from apps.metering.records import REDIS_COUNTS, count_of_field

from .models import UsageMove
from .recording import write_counts

logger = logging.getLogger("apps.api")

BATCH_PREFIX = "gatehouse:usage:batch:"
MOVES_KEPT = timedelta(days=2)


def usage_move() -> int:
    """Move the counts waiting in Redis to the hourly rows; return how many requests they
    counted (0 without Redis). Run by app processes after each usage flush."""
    if not settings.REDIS_URL:
        return 0
    return batch_move(REDIS_COUNTS, BATCH_PREFIX, _read, _write)


def usage_move_all(now: float | None = None) -> int:
    """The minute job: move what waits, and every batch a dead mover left behind."""
    if not settings.REDIS_URL:
        return 0
    return usage_move() + batches_sweep(BATCH_PREFIX, _read, _write, now)


def _read(client: Any, name: str) -> Counter[tuple[int, datetime, str, str]]:
    counts: Counter[tuple[int, datetime, str, str]] = Counter()
    for field, amount in client.hgetall(name).items():
        entry = count_of_field(field.decode() if isinstance(field, bytes) else field)
        if entry is None:
            logger.warning("A usage count field in Redis is not ours: %r", field)
            continue
        counts[entry] += int(amount)
    return counts


def _write(batch: str, counts: Counter[tuple[int, datetime, str, str]]) -> int:
    with transaction.atomic():
        _move, created = UsageMove.objects.get_or_create(batch=batch)
        if created and counts:
            write_counts(counts)
    return sum(counts.values()) if created else 0


def usage_moves_prune(now: datetime | None = None) -> int:
    """Forget moved batches older than two days (the daily job)."""
    deleted, _ = UsageMove.objects.filter(
        moved_at__lt=(now or timezone.now()) - MOVES_KEPT
    ).delete()
    return deleted
