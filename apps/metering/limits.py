"""Rate limits: a token bucket per key (GCRA), and one per client address for failed sign-ins.

A bucket holds `limit` requests and refills at `limit` per minute, so a key may burst up to its
limit and then goes at the steady rate; unlike a fixed window, no clock boundary lets twice the
limit through. The state of a bucket is one number, its "theoretical arrival time" (GCRA).

With REDIS_URL set the buckets live in Redis (one atomic script call per request) and every app
server shares them. Without it each process keeps its own, which `manage.py check --deploy`
points out. If Redis cannot be reached the request is served (fail open): the process counts
locally for a few seconds before it tries Redis again, logs a warning at most once a minute, and
`/healthz` reports the degraded part.
"""

import logging
import math
import threading
import time

from django.conf import settings

from apps.common.cache import (  # noqa: F401 - REDIS_RETRY_SECONDS re-exported
    REDIS_RETRY_SECONDS,
    redis_client,
    redis_health,
)

from .quotas import (
    QuotaTake,
    counted_without_redis,
    last_seen,
    quota_state,
)
from .redis_call import NOTHING, LimiterNote, take_in_redis
from .standing import WINDOW_SECONDS, RateLimitState, bucket_state

logger = logging.getLogger("apps.metering")

LOCAL_BUCKETS_MAX = 100_000


class _LocalBuckets:
    """The buckets of this process."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tats: dict[str, float] = {}

    def take(self, bucket: str, now: float, interval: float) -> tuple[bool, float]:
        with self.lock:
            tat = self.tats.get(bucket, now)
            if tat < now or tat > now + WINDOW_SECONDS + interval:
                # Never further ahead than one window: only a clock set back gets here.
                tat = now
            new_tat = tat + interval
            if new_tat - WINDOW_SECONDS > now:
                return False, tat
            if len(self.tats) >= LOCAL_BUCKETS_MAX:
                self.tats = {b: t for b, t in self.tats.items() if t > now}
            self.tats[bucket] = new_tat
            return True, new_tat

    def clear(self) -> None:
        with self.lock:
            self.tats.clear()


_local = _LocalBuckets()


def _take_locally(
    bucket: str, limit: int, interval: float | None, now: float, quota: QuotaTake | None
) -> RateLimitState:
    """This process's bucket, and the quota counted in PostgreSQL (no Redis, or out of reach)."""
    allowed, tat = _local.take(bucket, now, interval) if interval is not None else (True, now)
    state = bucket_state(limit, interval or 0, now, tat, allowed)
    if quota is None or not allowed:
        return state
    admitted, used = quota.take_in_database(last_seen.get(quota.redis_key))
    return state.with_quota(quota_state(quota, used, refused=not admitted, in_database=True))


def rate_limit_take(
    bucket: str,
    limit: int,
    *,
    now: float | None = None,
    block: str | None = None,
    note: LimiterNote = NOTHING,
    quota: QuotaTake | None = None,
) -> RateLimitState | None:
    """Take one request from `bucket`, which holds `limit` a minute, and from the key's
    `quota` when it has one; None when limits are off and there is no quota.

    `block`, an address, used only with Redis: the request is refused while the address is
    blocked on any app server, and the address is blocked when this bucket refuses. Without
    Redis the caller keeps its own per-process block.

    `note`, with Redis: the request's usage count and request log entry, written in the same
    script call as allowed or as refused; the state then says `counted`. What this process
    gathered for Redis since its last call rides along too, so a request's count and entry
    reach Redis before its answer does and a killed process loses none. If the call fails it
    may still have run (Redis died before replying): the state says `unsettled`, and the
    request is settled later by the mark the call sets (apps/metering/settling.py).

    `quota`: admitted only while the period's count is below the allowance, which the same
    call raises by one (apps/metering/quotas.py); in PostgreSQL when Redis is not there.
    """
    if limit <= 0 and quota is None:
        return None
    now = time.time() if now is None else now
    interval = WINDOW_SECONDS / limit if limit > 0 else None
    if settings.REDIS_URL and redis_health.should_try(now):
        try:
            counted_without_redis.merge()
            outcome, value, used = take_in_redis(bucket, now, interval, block, note, quota)
        except Exception as error:  # any failure of the shared store: serve, count locally
            redis_health.failed(error, now)
            if quota is not None:
                counted_without_redis.add(quota)
            state = _take_locally(bucket, limit, interval, now, quota)
            return state.unsettle(bool(note.mark))
        redis_health.recovered()
        if outcome == 2:
            seconds = max(1, math.ceil(value))
            return RateLimitState(
                limit, 0, seconds, seconds, blocked=True, counted=note.noted(False)
            )
        allowed = outcome in (1, 4)
        state = bucket_state(limit, interval or 0, now, value, allowed, note.noted(outcome == 1))
        if quota is None or outcome == 0:
            return state
        last_seen.saw(quota.redis_key, used)
        return state.with_quota(quota_state(quota, used, refused=outcome == 4))
    if quota is not None and settings.REDIS_URL:
        counted_without_redis.add(quota)
    return _take_locally(bucket, limit, interval, now, quota)


def rate_limit_reset() -> None:
    """Forget this process's buckets and Redis failures (for tests)."""
    _local.clear()
    redis_health.reset()
    counted_without_redis.clear()
    last_seen.clear()


def redis_status() -> str:
    """For /healthz: "not configured", "ok", or what is wrong with Redis."""
    if not settings.REDIS_URL:
        return "not configured"
    try:
        redis_client().ping()
    except Exception as error:
        redis_health.failed(error, time.time())
        return f"unreachable ({type(error).__name__}); rate limits are counted per process"
    redis_health.recovered()
    return "ok"
