"""Refused requests counted per key: what an owner needs to see a revoked key still being
tried, or an integration missing a scope. Counts live in the cache (Redis when configured, so
every app server adds to the same numbers) in hourly buckets kept a day; the hot path of an
accepted request never touches them."""

import time

from django.core.cache import cache

BUCKET_SECONDS = 3600
KEPT_BUCKETS = 24
# The refusals a request that named a key can get (docs/product.md §3.1).
REASONS = (
    "expired-key",
    "revoked-key",
    "pending-key",
    "denied-key",
    "suspended-key",
    "invalid-key",
    "insufficient-scope",
    "insufficient-role",
    "ip-not-allowed",
    "rate-limited",
)


def _bucket(key_id: int, hour: int, reason: str) -> str:
    return f"gatehouse:refusals:{key_id}:{hour}:{reason}"


def refusal_count(key_id: int, reason: str) -> None:
    """Add one refusal of `reason` to the key's current hour (`finish` of a refused request)."""
    if reason not in REASONS:
        return
    name = _bucket(key_id, int(time.time() // BUCKET_SECONDS), reason)
    if not cache.add(name, 1, timeout=(KEPT_BUCKETS + 1) * BUCKET_SECONDS):
        try:
            cache.incr(name)
        except ValueError:  # expired between add and incr
            cache.add(name, 1, timeout=(KEPT_BUCKETS + 1) * BUCKET_SECONDS)


def refusals_last_day(key_id: int) -> dict[str, int]:
    """Refusals of the key in the last 24 hours by reason, most frequent first."""
    now = int(time.time() // BUCKET_SECONDS)
    names = {
        _bucket(key_id, hour, reason): reason
        for hour in range(now - KEPT_BUCKETS + 1, now + 1)
        for reason in REASONS
    }
    totals: dict[str, int] = {}
    for name, count in cache.get_many(list(names)).items():
        totals[names[name]] = totals.get(names[name], 0) + int(count)
    return dict(sorted(totals.items(), key=lambda item: -item[1]))
