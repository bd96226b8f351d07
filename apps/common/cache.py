"""The shared cache, degraded rather than down: Redis when it answers, this process otherwise.

Sign-in throttling, password reset, /device and the API's limits all keep state in the cache.
With Django's own RedisCache an unreachable Redis turns each of those pages into a 500; this
backend serves them from a per-process memory cache instead (limits then count per process,
as they do without Redis at all), retries Redis every few seconds, and says so in the log at
most once a minute. The API's rate limiter shares the same record of Redis's health.
"""

import logging
import math
import time
from collections.abc import Callable
from typing import Any

from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache, RedisCacheClient

logger = logging.getLogger("apps.common")

# After Redis fails, this process works locally for this long before trying Redis again, so an
# outage costs one failed connection every few seconds, not one per request.
REDIS_RETRY_SECONDS = 5
WARNING_INTERVAL_SECONDS = 60


class RedisHealth:
    """When this process last failed to reach Redis, and when it last said so."""

    def __init__(self) -> None:
        self.failed_at: float | None = None
        self.error = ""
        self.warned_at = -math.inf

    def failed(self, error: Exception, now: float | None = None) -> None:
        now = time.time() if now is None else now
        self.failed_at, self.error = now, f"{type(error).__name__}: {error}"
        if now - self.warned_at >= WARNING_INTERVAL_SECONDS:
            self.warned_at = now
            logger.warning(
                "Redis is unreachable (%s); limits and the cache are kept per process "
                "until it is back.",
                self.error,
            )

    def should_try(self, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        return self.failed_at is None or now - self.failed_at >= REDIS_RETRY_SECONDS

    def recovered(self) -> None:
        if self.failed_at is not None:
            logger.warning("Redis is reachable again; limits and the cache are shared once more.")
        self.failed_at = None

    def reset(self) -> None:
        self.failed_at = None
        self.warned_at = -math.inf


redis_health = RedisHealth()


def _degradable(name: str) -> Callable[..., Any]:
    def method(self: "FailOpenRedisCache", *args: Any, **kwargs: Any) -> Any:
        if redis_health.should_try():
            try:
                result = getattr(super(FailOpenRedisCache, self), name)(*args, **kwargs)
            except self._redis_errors as error:
                redis_health.failed(error)
            else:
                redis_health.recovered()
                return result
        return getattr(self.fallback, name)(*args, **kwargs)

    method.__name__ = name
    return method


class _OneClientAPool(RedisCacheClient):
    """Django's client wraps its connection pool in a new redis.Redis for every operation,
    which cost about 0.3 ms a request (redis-py's client __init__ is heavy; issue 50's profile
    of the hot path). A redis.Redis is safe to share, so each pool gets one, kept."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        # By the pool itself: with replicas, reads pick their pool at random.
        pool = self._get_connection_pool(write)  # type: ignore[attr-defined]
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)  # type: ignore[attr-defined]
        return client


class FailOpenRedisCache(RedisCache):
    """RedisCache that falls back to a per-process memory cache while Redis is unreachable."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = _OneClientAPool
        import redis

        self._redis_errors = (redis.exceptions.RedisError, OSError)
        self.fallback = LocMemCache(f"fail-open-{server}", {"OPTIONS": {"MAX_ENTRIES": 10_000}})

    add = _degradable("add")
    get = _degradable("get")
    set = _degradable("set")
    touch = _degradable("touch")
    delete = _degradable("delete")
    get_many = _degradable("get_many")
    has_key = _degradable("has_key")
    incr = _degradable("incr")
    set_many = _degradable("set_many")
    delete_many = _degradable("delete_many")
    clear = _degradable("clear")


def redis_client() -> Any:
    """The redis.Redis client of the default cache (Django's RedisCache keeps it behind
    `_cache`), for the scripts and pipelines the cache API does not offer."""
    from django.core.cache import cache

    return cache._cache.get_client(write=True)  # type: ignore[attr-defined]
