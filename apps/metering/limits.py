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
from dataclasses import dataclass, replace

from django.conf import settings

from apps.common.cache import (  # noqa: F401 - REDIS_RETRY_SECONDS re-exported
    REDIS_RETRY_SECONDS,
    redis_client,
    redis_health,
)

from .pending import NOTED_SECONDS, redis_pending_take, redis_unsettled_add
from .records import REDIS_COUNTS, REDIS_REQUESTS

logger = logging.getLogger("apps.metering")

WINDOW_SECONDS = 60
LOCAL_BUCKETS_MAX = 100_000

# KEYS[1]: the bucket; KEYS[2]: the usage counts and KEYS[3] the request log
# (apps/metering/buffer.py); KEYS[4]: the request's mark ("" for none), set to `a` (noted as
# allowed) or `r` (as refused) for `NOTED_SECONDS`, so that a process whose answer never came
# can ask later whether this call ran (apps/metering/settling.py); KEYS[5], when given: a client
# address's block, which refuses at once while it holds and is set when this bucket refuses.
# ARGV: now, emission interval, window
# (seconds, as decimal strings); the count field of this request if allowed and if refused
# ("" counts nothing); its request log entry ("" logs nothing) and the status it gets if
# allowed and if refused; how many pairs of count field and amount follow, the pairs, then
# request log items: what this process gathered since its last call. Returns {allowed (1/0),
# the bucket's arrival time after this request, as a string: Redis would truncate a Lua number
# to an integer}, or {2, seconds left} for a blocked address. One round trip either way.
_GCRA_SCRIPT = """
local now = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local pairs_end = 9 + 2 * tonumber(ARGV[9])
for i = 10, pairs_end, 2 do redis.call('HINCRBY', KEYS[2], ARGV[i], ARGV[i + 1]) end
if #ARGV > pairs_end then redis.call('RPUSH', KEYS[3], unpack(ARGV, pairs_end + 1)) end
local function note(field, status, mark)
  if field ~= '' then redis.call('HINCRBY', KEYS[2], field, 1) end
  if ARGV[6] ~= '' then redis.call('RPUSH', KEYS[3], 'P' .. status .. '|' .. ARGV[6]) end
  if KEYS[4] ~= '' then redis.call('SET', KEYS[4], mark, 'EX', {noted}) end
end
if KEYS[5] then
  local left = redis.call('PTTL', KEYS[5])
  if left > 0 then
    note(ARGV[5], ARGV[8], 'r')
    return {2, tostring(left / 1000)}
  end
end
local tat = tonumber(redis.call('GET', KEYS[1]) or ARGV[1])
if tat < now or tat > now + window + interval then tat = now end
local new_tat = tat + interval
if new_tat - window > now then
  if KEYS[5] then
    local ms = math.ceil((tat + interval - window - now) * 1000)
    redis.call('SET', KEYS[5], '1', 'PX', math.max(ms, 1000))
  end
  note(ARGV[5], ARGV[8], 'r')
  return {0, tostring(tat)}
end
redis.call('SET', KEYS[1], tostring(new_tat), 'PX', math.ceil((new_tat - now) * 1000) + 1000)
note(ARGV[4], ARGV[7], 'a')
return {1, tostring(new_tat)}
""".replace("{noted}", str(NOTED_SECONDS))


@dataclass(frozen=True)
class RateLimitState:
    """One request's standing in its bucket, for the RateLimit fields and the 429."""

    limit: int
    remaining: int
    reset_seconds: int  # until the bucket is full again (or, when refused, until the next token)
    retry_after: int | None = None  # set when the request is refused
    blocked: bool = False  # refused because the client's address is blocked (shared, Redis)
    counted: bool = False  # the request was counted and logged in Redis by this call (`note`)
    unsettled: bool = False  # its call to Redis failed and may have run: settled by its mark

    @property
    def refused(self) -> bool:
        return self.retry_after is not None

    def unsettle(self, unsettled: bool) -> "RateLimitState":
        return replace(self, unsettled=unsettled)

    def headers(self) -> dict[str, str]:
        """The IETF fields (draft-ietf-httpapi-ratelimit-headers-10), plus Retry-After on 429."""
        fields = {
            "RateLimit-Policy": f'"default";q={self.limit};w={WINDOW_SECONDS}',
            "RateLimit": f'"default";r={self.remaining};t={self.reset_seconds}',
        }
        if self.retry_after is not None:
            fields["Retry-After"] = str(self.retry_after)
        return fields


def _state(
    limit: int, interval: float, now: float, tat: float, allowed: bool, counted: bool = False
) -> RateLimitState:
    if not allowed:
        retry_after = max(1, math.ceil(tat + interval - WINDOW_SECONDS - now))
        return RateLimitState(limit, 0, retry_after, retry_after, counted=counted)
    remaining = int((WINDOW_SECONDS - (tat - now)) / interval + 1e-9)
    return RateLimitState(
        limit, max(0, min(limit, remaining)), max(0, math.ceil(tat - now)), counted=counted
    )


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
    bucket: str, now: float, interval: float, block: str | None, note: LimiterNote
) -> tuple[int, float]:
    client = redis_client()
    keys = [f"gatehouse:ratelimit:{bucket}", REDIS_COUNTS, REDIS_REQUESTS, note.mark]
    if block is not None:
        keys.append(f"gatehouse:block:{block}")
    # What waits rides only on a marked call: if its answer is lost, the mark says if it ran.
    changes, log_items = redis_pending_take() if note.mark else ([], [])
    args: list[str | int] = [
        *(repr(now), repr(interval), WINDOW_SECONDS),
        *(note.count_allowed, note.count_refused),
        *(note.log_entry, note.status_allowed, note.status_refused),
        len(changes),
    ]
    for field, amount in changes:
        args += [field, amount]
    args += log_items
    try:
        outcome, value = client.eval(_GCRA_SCRIPT, len(keys), *keys, *args)
    except Exception:
        if note.mark:  # it may have run before the connection broke: settled later, once
            fields = (note.count_allowed, note.count_refused)
            redis_unsettled_add(note.mark, *fields, changes, log_items)
        raise
    return int(outcome), float(value)


def rate_limit_take(
    bucket: str,
    limit: int,
    *,
    now: float | None = None,
    block: str | None = None,
    note: LimiterNote = NOTHING,
) -> RateLimitState | None:
    """Take one request from `bucket`, which holds `limit` a minute; None when limits are off.

    `block`, an address, used only with Redis: the request is refused while the address is
    blocked on any app server, and the address is blocked when this bucket refuses. Without
    Redis the caller keeps its own per-process block.

    `note`, with Redis: the request's usage count and request log entry, written in the same
    script call as allowed or as refused; the state then says `counted`. What this process
    gathered for Redis since its last call rides along too, so a request's count and entry
    reach Redis before its answer does and a killed process loses none. If the call fails it
    may still have run (Redis died before replying): the state says `unsettled`, and the
    request is settled later by the mark the call sets (apps/metering/settling.py).
    """
    if limit <= 0:
        return None
    now = time.time() if now is None else now
    interval = WINDOW_SECONDS / limit
    if settings.REDIS_URL and redis_health.should_try(now):
        try:
            outcome, value = _take_in_redis(bucket, now, interval, block, note)
        except Exception as error:  # any failure of the shared store: serve, count locally
            redis_health.failed(error, now)
            allowed, tat = _local.take(bucket, now, interval)
            return _state(limit, interval, now, tat, allowed).unsettle(bool(note.mark))
        else:
            redis_health.recovered()
            if outcome == 2:
                seconds = max(1, math.ceil(value))
                return RateLimitState(
                    limit, 0, seconds, seconds, blocked=True, counted=note.noted(False)
                )
            return _state(limit, interval, now, value, bool(outcome), note.noted(bool(outcome)))
    else:
        allowed, tat = _local.take(bucket, now, interval)
    return _state(limit, interval, now, tat, allowed)


def rate_limit_reset() -> None:
    """Forget this process's buckets and Redis failures (for tests)."""
    _local.clear()
    redis_health.reset()


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
