"""A per-key fixed-window rate limit, counted in the default cache.

With REDIS_URL set the counters live in Redis and are shared by every app server; without it
each process counts on its own (fine for one server and for development).
"""

import math
import time

from django.conf import settings
from django.core.cache import cache

WINDOW_SECONDS = 60


def rate_limit_hit(key_id: int, *, now: float | None = None) -> int | None:
    """Count one request of a key; the seconds to wait when it is over the limit, else None."""
    limit = settings.API_RATE_LIMIT_PER_MINUTE
    if limit <= 0:
        return None
    now = time.time() if now is None else now
    window = int(now // WINDOW_SECONDS)
    counter = f"ratelimit:{key_id}:{window}"
    try:
        count = cache.incr(counter)
    except ValueError:  # first request of the window: the counter does not exist yet
        if cache.add(counter, 1, timeout=WINDOW_SECONDS * 2):
            count = 1
        else:
            count = cache.incr(counter)
    if count > limit:
        return max(1, math.ceil((window + 1) * WINDOW_SECONDS - now))
    return None
