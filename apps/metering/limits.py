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
from dataclasses import dataclass

from django.conf import settings

from apps.common.cache import (  # noqa: F401 - REDIS_RETRY_SECONDS re-exported
    REDIS_RETRY_SECONDS,
    redis_client,
    redis_health,
)

from .pending import NOTED_SECONDS, redis_pending_take, redis_unsettled_add
from .quotas import (
    TOUCHED,
    QuotaTake,
    counted_without_redis,
    last_seen,
    quota_seed,
    quota_state,
)
from .records import REDIS_COUNTS, REDIS_REQUESTS
from .standing import WINDOW_SECONDS, RateLimitState, bucket_state

logger = logging.getLogger("apps.metering")

LOCAL_BUCKETS_MAX = 100_000

# KEYS[1]: the bucket; KEYS[2]: the usage counts and KEYS[3] the request log
# (apps/metering/buffer.py); KEYS[4]: the request's mark ("" for none), set to `a` (noted as
# allowed) or `r` (as refused) for `NOTED_SECONDS`, so that a process whose answer never came
# can ask later whether this call ran (apps/metering/settling.py); KEYS[5] and KEYS[6]: the
# key's quota count for this period and the set of counts changed ("" for no quota,
# apps/metering/quotas.py); KEYS[7], when given: a client address's block, which refuses at
# once while it holds and is set when this bucket refuses.
# ARGV: now, emission interval ("" for no bucket: limits off), window (seconds, as decimal
# strings); the count field of this request if allowed and if refused ("" counts nothing); its
# request log entry ("" logs nothing) and the status it gets if allowed and if refused; how
# many pairs of count field and amount follow; the quota's allowance ("" for none); the pairs,
# then request log items: what this process gathered since its
# last call. Returns {1 allowed or 0 refused, the bucket's arrival time after this request as a
# string (Redis would truncate a Lua number to an integer), the quota's count}; {2, seconds
# left} for a blocked address; {3} when the quota's count is not in Redis (nothing was done:
# the caller rebuilds it and calls again); {4, the count} when the quota is spent.
_GCRA_SCRIPT = """
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[3])
local quota = KEYS[5] ~= ''
local used = 0
if quota then
  local held = redis.call('GET', KEYS[5])
  if not held then return {3, ''} end
  used = tonumber(held)
end
local pairs_end = 10 + 2 * tonumber(ARGV[9])
for i = 11, pairs_end, 2 do redis.call('HINCRBY', KEYS[2], ARGV[i], ARGV[i + 1]) end
if #ARGV > pairs_end then redis.call('RPUSH', KEYS[3], unpack(ARGV, pairs_end + 1)) end
local function note(field, status, mark)
  if field ~= '' then redis.call('HINCRBY', KEYS[2], field, 1) end
  if ARGV[6] ~= '' then redis.call('RPUSH', KEYS[3], 'P' .. status .. '|' .. ARGV[6]) end
  if KEYS[4] ~= '' then redis.call('SET', KEYS[4], mark, 'EX', {noted}) end
end
if KEYS[7] then
  local left = redis.call('PTTL', KEYS[7])
  if left > 0 then
    note(ARGV[5], ARGV[8], 'r')
    return {2, tostring(left / 1000)}
  end
end
local new_tat, tat, interval = now, now, 0
if ARGV[2] ~= '' then
  interval = tonumber(ARGV[2])
  tat = tonumber(redis.call('GET', KEYS[1]) or ARGV[1])
  if tat < now or tat > now + window + interval then tat = now end
end
if quota and used >= tonumber(ARGV[10]) then
  note(ARGV[5], ARGV[8], 'r')
  return {4, tostring(tat), used}
end
if ARGV[2] ~= '' then
  new_tat = tat + interval
  if new_tat - window > now then
    if KEYS[7] then
      local ms = math.ceil((tat + interval - window - now) * 1000)
      redis.call('SET', KEYS[7], '1', 'PX', math.max(ms, 1000))
    end
    note(ARGV[5], ARGV[8], 'r')
    return {0, tostring(tat)}
  end
  redis.call('SET', KEYS[1], tostring(new_tat), 'PX', math.ceil((new_tat - now) * 1000) + 1000)
end
if quota then
  used = redis.call('INCR', KEYS[5])  -- keeps the expiry its rebuild set
  redis.call('SADD', KEYS[6], KEYS[5])
end
note(ARGV[4], ARGV[7], 'a')
return {1, tostring(new_tat), used}
""".replace("{noted}", str(NOTED_SECONDS))


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


@dataclass(frozen=True)
class LimiterNote:
    """What the limiter's call writes about the request beside taking from its bucket (Redis
    only): the usage count field if allowed and if refused, and the request log entry with the
    status it gets if allowed and if refused ("" for none)."""

    count_allowed: str = ""
    count_refused: str = ""
    log_entry: str = ""
    status_allowed: int = 200
    status_refused: int = 429
    mark: str = ""  # the request's mark in Redis (`noted_key`), set by the same call

    def noted(self, allowed: bool) -> bool:
        return bool(self.count_allowed if allowed else self.count_refused) or bool(self.log_entry)


NOTHING = LimiterNote()


def _take_in_redis(
    bucket: str,
    now: float,
    interval: float | None,
    block: str | None,
    note: LimiterNote,
    quota: QuotaTake | None,
) -> tuple[int, float, int]:
    client = redis_client()
    quota_keys = [quota.redis_key, TOUCHED] if quota is not None else ["", ""]
    keys = [f"gatehouse:ratelimit:{bucket}", REDIS_COUNTS, REDIS_REQUESTS, note.mark, *quota_keys]
    if block is not None:
        keys.append(f"gatehouse:block:{block}")
    # What waits rides only on a marked call: if its answer is lost, the mark says if it ran.
    changes, log_items = redis_pending_take() if note.mark else ([], [])
    args: list[str | int] = [
        *(repr(now), "" if interval is None else repr(interval), WINDOW_SECONDS),
        *(note.count_allowed, note.count_refused),
        *(note.log_entry, note.status_allowed, note.status_refused),
        len(changes),
        quota.limit if quota is not None else "",
    ]
    for field, amount in changes:
        args += [field, amount]
    args += log_items
    try:
        answer = client.eval(_GCRA_SCRIPT, len(keys), *keys, *args)
        if answer[0] == 3 and quota is not None:  # the period's count is not in Redis: rebuilt
            quota_seed(quota)
            answer = client.eval(_GCRA_SCRIPT, len(keys), *keys, *args)
    except Exception:
        if note.mark:  # it may have run before the connection broke: settled later, once
            fields = (note.count_allowed, note.count_refused)
            redis_unsettled_add(note.mark, *fields, changes, log_items)
        raise
    if answer[0] == 3:
        raise RuntimeError("The quota's count vanished from Redis as it was rebuilt.")
    return int(answer[0]), float(answer[1]), int(answer[2]) if len(answer) > 2 else 0


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
            outcome, value, used = _take_in_redis(bucket, now, interval, block, note, quota)
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
