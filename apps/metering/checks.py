"""The deploy checks of metering: rate limits shared across processes, and what Redis keeps."""

from typing import Any

from django.conf import settings
from django.core.checks import Tags, Warning, register


@register(Tags.database, deploy=True)
def check_redis_persistence(app_configs: Any, **kwargs: Any) -> list[Warning]:
    """Usage counts and the request log wait in Redis until they are moved: without its
    append-only file, a Redis crash loses them (docs/operations.md)."""
    if not settings.REDIS_URL:
        return []
    from apps.common.cache import redis_client

    try:
        setting = redis_client().config_get("appendonly").get("appendonly")
    except Exception:  # unreachable, or CONFIG is disabled (a managed Redis): nothing to say
        return []
    if setting in ("yes", b"yes"):
        return []
    return [
        Warning(
            "Redis keeps no append-only file: a Redis crash loses the usage counts and request "
            "log entries waiting in it (up to USAGE_FLUSH_SECONDS of traffic) and any batch "
            "being moved.",
            hint="Set `appendonly yes` (and `appendfsync always` to lose nothing) in redis.conf; "
            "see deploy/redis.conf.",
            id="gatehouse.W002",
        )
    ]


@register(Tags.security, deploy=True)
def check_shared_rate_limits(app_configs: Any, **kwargs: Any) -> list[Warning]:
    """Without Redis each app server process counts rate limits on its own."""
    if settings.REDIS_URL or settings.API_RATE_LIMIT_PER_MINUTE <= 0:
        return []
    return [
        Warning(
            "REDIS_URL is not set: rate limits and failed-authentication limits are counted per "
            "process, so N processes let N times the limit through.",
            hint="Set REDIS_URL to a Redis that every app server shares.",
            id="gatehouse.W001",
        )
    ]
