"""What a quota's current period used, as people and records see it: the key list's bar, the
key's page, `quotaUse` in the key's record, the refusal's words, Key health's count."""

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from apps.api.http import iso_time
from apps.common.cache import redis_client
from apps.common.quota_periods import Period, Quota

from .counting import QuotaHolder, holder_of, net_used_in_database, redis_key_of

logger = logging.getLogger("apps.quotas")


@dataclass(frozen=True)
class QuotaUse:
    """A quota's current period as people see it."""

    quota: Quota
    used: int
    period: Period

    @property
    def left(self) -> int:
        return max(0, self.quota.requests - self.used)

    @property
    def shown_used(self) -> int:
        """Used, as people read it (a top-up can take the net count below 0)."""
        return max(0, self.used)

    @property
    def percent(self) -> int:
        return min(100, self.shown_used * 100 // self.quota.requests)

    def as_json(self) -> dict[str, object]:
        return {
            **self.quota.as_json(),
            "used": max(0, self.used),
            "left": self.left,
            "periodStart": iso_time(self.period.start),
            "refillsAt": iso_time(self.period.end) if self.period.end else None,
        }


def quota_uses(holders: Iterable[QuotaHolder], now: datetime) -> dict[str, QuotaUse]:
    """The current period's use of each holder, by scope: from Redis where it holds the count
    (one MGET), else from PostgreSQL."""
    holders = list(holders)
    if not holders:
        return {}
    periods = [holder.period(now) for holder in holders]
    held: list[object] = [None] * len(holders)
    if settings.REDIS_URL:
        try:
            keys = [redis_key_of(h.scope, p) for h, p in zip(holders, periods, strict=True)]
            held = list(redis_client().mget(keys))
        except Exception as error:
            logger.warning("Quota counts read from PostgreSQL: Redis is away (%s).", error)
    uses = {}
    for holder, period, value in zip(holders, periods, held, strict=True):
        if isinstance(value, bytes | str | int):
            used = int(value)
        else:
            used = net_used_in_database(holder, period)
        uses[holder.scope] = QuotaUse(holder.quota, used, period)
    return uses


def spent_text(holder: QuotaHolder, now: datetime) -> str:
    """The 429 quota-exceeded's message: which quota, and when it refills."""
    return f"This key's quota of {holder.quota} is spent; {refill_text(holder.period(now))}."


def refill_text(period: Period) -> str:
    """When a period's allowance refills, as the 429's message says it."""
    if period.end is None:
        return "it does not refill; an owner can top it up"
    return f"it refills at {period.end:%Y-%m-%d %H:%M} UTC"


def quota_wider(quota: Quota | None, caller: Quota | None) -> str | None:
    """Why a new key with `quota` would escape its maker's (`caller`'s) quota, or None."""
    if caller is None or (quota is not None and quota.narrower_than(caller)):
        return None
    return f"its quota would be more than this key's {caller}"


def quota_use_json(key: Any) -> dict[str, object] | None:
    """A key's quota's current period (used, left, its refill: its service account's, for a
    shared quota), or None without a quota."""
    holder = holder_of(key)
    return quota_uses([holder], datetime.now(UTC))[holder.scope].as_json() if holder else None


def key_quota_uses(keys: Iterable[Any]) -> dict[int, QuotaUse]:
    """The current period of each key with a quota, by key id: one Redis MGET for them all."""
    holders = {key.pk: holder for key in keys if (holder := holder_of(key)) is not None}
    uses = quota_uses(holders.values(), datetime.now(UTC))
    return {key_id: uses[holder.scope] for key_id, holder in holders.items()}


def attach_quota_uses(keys: Iterable[Any]) -> None:
    """Give each key its current period as `quota_use` (None without a quota), for pages."""
    keys = list(keys)
    uses = key_quota_uses(keys)
    for key in keys:
        key.quota_use = uses.get(key.pk)
