"""A key's quota on the hot path (docs/product.md §17): taken in the rate limiter's own Redis
script call, so a key with a quota costs no second round trip.

The count in Redis is the period's *net* use: requests admitted (each reserves one unit as it
is admitted) less the units given back by answers that were not 2xx, less the owners' top-ups.
A request is admitted only while that count is below the allowance, and the admission and the
reservation are one atomic step of the script, so concurrent requests on any number of app
servers never pass the allowance (docs/operations.md, "Quotas"). The caller supplies the
PostgreSQL side (apps/quotas): the rebuild of a count Redis does not hold (its first request in
a period, or after a Redis crash), and the count itself when Redis is out of reach.
"""

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from apps.common.cache import redis_client

logger = logging.getLogger("apps.metering")

TOUCHED = "gatehouse:quota:touched"  # the counts changed since the last checkpoint


@dataclass(frozen=True)
class QuotaTake:
    """What the limiter needs to take one request from a key's quota."""

    redis_key: str  # the period's count in Redis: gatehouse:quota:<scope>:<period start>
    limit: int  # the allowance, N
    window: int | None  # the period's length in seconds (None: a one-off allowance)
    reset_seconds: int | None  # until the next period (None: it never refills)
    expire_seconds: int | None  # how long Redis keeps the count (None: for good)
    rebuild: Callable[[], int]  # the net use so far, from PostgreSQL
    # Without Redis: (admitted, net use after), given the count this process last saw in Redis
    take_in_database: Callable[[int | None], tuple[bool, int]]
    give_back_in_database: Callable[[], None]
    # The units PostgreSQL counted while Redis was away and Redis has not been given yet:
    # taken (reset to 0) as they are added to Redis's count.
    take_offline: Callable[[], int]


@dataclass(frozen=True)
class QuotaState:
    """A request's standing in its key's quota, for the RateLimit fields and the 429."""

    limit: int
    left: int
    window: int | None
    reset_seconds: int | None
    refused: bool = False
    in_database: bool = False  # counted in PostgreSQL (no Redis, or out of reach)

    def policy_item(self) -> str:
        window = f";w={self.window}" if self.window is not None else ""
        return f'"quota";q={self.limit}{window}'

    def item(self) -> str:
        reset = f";t={self.reset_seconds}" if self.reset_seconds is not None else ""
        return f'"quota";r={self.left}{reset}'


def quota_state(
    take: QuotaTake, used: int, *, refused: bool = False, in_database: bool = False
) -> QuotaState:
    left = max(0, take.limit - used)
    return QuotaState(take.limit, left, take.window, take.reset_seconds, refused, in_database)


# Given back: one unit of a period's count, only where the count is still held (a count Redis
# lost is rebuilt from PostgreSQL, which never counted the unit as used).
_GIVE_BACK = """
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECRBY', KEYS[1], ARGV[1]) end
return false
"""
# What PostgreSQL counted while Redis was out of reach, added where the count is held (a count
# Redis lost is rebuilt from PostgreSQL, whose copy holds those units already).
_ADD_OFFLINE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('INCRBY', KEYS[1], ARGV[1]) end
return false
"""


def quota_seed(take: QuotaTake) -> None:
    """Put the period's count, rebuilt from PostgreSQL, in Redis unless another request did."""
    net = take.rebuild()
    client = redis_client()
    if take.expire_seconds is None:
        client.set(take.redis_key, net, nx=True)
    else:
        client.set(take.redis_key, net, nx=True, ex=take.expire_seconds)


def quota_give_back(redis_key: str, amount: int = 1) -> None:
    """Give back `amount` units of a period's count in Redis (a request that was not 2xx, a
    top-up); a failure keeps them used: a lost unit never becomes a fresh one."""
    try:
        redis_client().eval(_GIVE_BACK, 1, redis_key, amount)
    except Exception as error:
        logger.warning("A quota unit could not be given back in Redis (%s).", error)


class _CountedWithoutRedis:
    """The quotas this process counted in PostgreSQL while Redis was out of reach: what was
    counted there is added to Redis's count once Redis answers again, before this process's
    next request, so that the requests served in between are not handed out a second time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[str, Callable[[], int]] = {}

    def add(self, take: QuotaTake) -> None:
        with self.lock:
            self.counts[take.redis_key] = take.take_offline

    def merge(self) -> None:
        if not self.counts:
            return
        with self.lock:
            counts, self.counts = self.counts, {}
        client = redis_client()
        for redis_key, take_offline in counts.items():
            if offline := take_offline():
                client.eval(_ADD_OFFLINE, 1, redis_key, offline)

    def clear(self) -> None:
        with self.lock:
            self.counts.clear()


counted_without_redis = _CountedWithoutRedis()


class _LastSeen:
    """The count of each quota this process last read in Redis. PostgreSQL's copy lags Redis's
    by up to a flush; when Redis goes away, each process raises the copy to what it saw last
    before counting there, so the outage does not hand out again what the lag hid."""

    MAX = 100_000

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[str, int] = {}

    def saw(self, redis_key: str, used: int) -> None:
        if len(self.counts) >= self.MAX:
            with self.lock:
                self.counts.clear()
        self.counts[redis_key] = used

    def get(self, redis_key: str) -> int | None:
        return self.counts.get(redis_key)

    def clear(self) -> None:
        with self.lock:
            self.counts.clear()


last_seen = _LastSeen()
