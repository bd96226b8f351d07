"""A per-key fixed-window rate limit.

With REDIS_URL set, the counters live in Redis (through Django's cache) and every app server
shares them. Without it, each process counts in a plain dictionary: the same per-process
behaviour Django's local-memory cache would give, at a fraction of its cost on the hot path.
"""

import math
import threading
import time

from django.conf import settings
from django.core.cache import cache

WINDOW_SECONDS = 60

_lock = threading.Lock()
_local_window = -1
_local_counts: dict[int, int] = {}


def _count_locally(key_id: int, window: int) -> int:
    global _local_window
    with _lock:
        if window != _local_window:
            _local_window = window
            _local_counts.clear()
        count = _local_counts.get(key_id, 0) + 1
        _local_counts[key_id] = count
    return count


def _count_in_cache(key_id: int, window: int) -> int:
    counter = f"ratelimit:{key_id}:{window}"
    if cache.add(counter, 1, timeout=WINDOW_SECONDS * 2):
        return 1
    return cache.incr(counter)


def rate_limit_hit(key_id: int, *, now: float | None = None) -> int | None:
    """Count one request of a key; the seconds to wait when it is over the limit, else None."""
    limit = settings.API_RATE_LIMIT_PER_MINUTE
    if limit <= 0:
        return None
    now = time.time() if now is None else now
    window = int(now // WINDOW_SECONDS)
    if settings.REDIS_URL:
        count = _count_in_cache(key_id, window)
    else:
        count = _count_locally(key_id, window)
    if count > limit:
        return max(1, math.ceil((window + 1) * WINDOW_SECONDS - now))
    return None


def rate_limit_reset() -> None:
    """Forget the local counters (for tests)."""
    global _local_window
    with _lock:
        _local_window = -1
        _local_counts.clear()
