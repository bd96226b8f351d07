"""Counts from Redis to PostgreSQL, exactly once.

With Redis configured, every request's count is added to one Redis hash by the rate limiter's
script call (apps/api/usage.py). A move renames that hash to a batch of its own (atomic: the
next request starts a new hash), writes the batch's counts and a `UsageMove` row in one
transaction, then deletes the batch. A mover that dies between the rename and the delete leaves
the batch in Redis: the minute job moves it again, and the `UsageMove` row tells it whether the
counts were already written. App processes move in every usage flush, so counts show within
seconds; the job every minute is what guarantees it when no app process is serving.
"""

import logging
import time
import uuid
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.api.usage import REDIS_COUNTS, count_of_field
from apps.common.cache import redis_client

from .models import UsageMove
from .recording import write_counts

logger = logging.getLogger("apps.api")

BATCH_PREFIX = "gatehouse:usage:batch:"
# A batch older than this was left by a mover that died: a live one finishes in far less.
ORPHAN_AFTER_SECONDS = 60
MOVES_KEPT = timedelta(days=2)


def usage_move() -> int:
    """Move the counts waiting in Redis to the hourly rows; return how many requests they
    counted (0 without Redis). Run by app processes after each usage flush."""
    if not settings.REDIS_URL:
        return 0
    client = redis_client()
    batch = f"{int(time.time())}:{uuid.uuid4().hex}"
    try:
        renamed = client.renamenx(REDIS_COUNTS, BATCH_PREFIX + batch)
    except Exception as error:
        if "no such key" in str(error).lower():
            return 0  # nothing counted since the last move
        raise
    return _move_batch(client, batch) if renamed else 0


def usage_move_all(now: float | None = None) -> int:
    """The minute job: move what waits, and every batch a dead mover left behind."""
    if not settings.REDIS_URL:
        return 0
    moved = usage_move()
    client = redis_client()
    now = time.time() if now is None else now
    for name in client.scan_iter(match=BATCH_PREFIX + "*", count=1000):
        batch = name.decode() if isinstance(name, bytes) else name
        batch = batch.removeprefix(BATCH_PREFIX)
        started = int(batch.split(":", 1)[0]) if batch.split(":", 1)[0].isdigit() else 0
        if now - started >= ORPHAN_AFTER_SECONDS:
            logger.warning("Moving usage counts a stopped mover left in Redis (%s).", batch)
            moved += _move_batch(client, batch)
    return moved


def _move_batch(client: Any, batch: str) -> int:
    name = BATCH_PREFIX + batch
    raw = client.hgetall(name)
    counts: Counter[tuple[int, datetime, str, str]] = Counter()
    for field, amount in raw.items():
        entry = count_of_field(field.decode() if isinstance(field, bytes) else field)
        if entry is None:
            logger.warning("A usage count field in Redis is not ours: %r", field)
            continue
        counts[entry] += int(amount)
    with transaction.atomic():
        _move, created = UsageMove.objects.get_or_create(batch=batch)
        if created and counts:
            write_counts(counts)
    client.delete(name)
    return sum(counts.values()) if created else 0


def usage_moves_prune(now: datetime | None = None) -> int:
    """Forget moved batches older than two days (the daily job)."""
    deleted, _ = UsageMove.objects.filter(
        moved_at__lt=(now or timezone.now()) - MOVES_KEPT
    ).delete()
    return deleted
