"""A key's quota counted (docs/product.md §17): what the limiter's Redis call is given for it,
the PostgreSQL side (rebuilding a count Redis lost, counting while Redis is away, the copy of
Redis's counts that rebuilds start from), and what a period has used so far.

The reasoning for exactness under concurrency is in docs/operations.md, "Quotas".
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Value
from django.db.models.functions import Greatest

from apps.common.cache import redis_client
from apps.common.quota_periods import WINDOW_SECONDS, Period, Quota, period_at
from apps.metering.quotas import TOUCHED, QuotaTake

from .models import QuotaCounter

logger = logging.getLogger("apps.quotas")

# Answered 2xx requests of a holder's keys since a moment (apps/usage registers it: the usage
# tables are that app's).
AnsweredCounter = Callable[["QuotaHolder", datetime], int]
_answered: list[AnsweredCounter] = []
CHECKPOINT_BATCH = 1000


# Hears the net use (scope, period start, used) of counts that may have reached 80 % or 100 %
# (apps/usage/quota_warnings.py tells of them).
ThresholdListener = Callable[[list[tuple[str, datetime, int]]], object]
_listeners: list[ThresholdListener] = []


def register_answered_counter(counter: AnsweredCounter) -> None:
    _answered[:] = [counter]


def register_threshold_listener(listener: ThresholdListener) -> None:
    _listeners[:] = [listener]


def _heard(counts: list[tuple[str, datetime, int]]) -> None:
    if counts and _listeners:
        try:
            _listeners[0](counts)
        except Exception:  # telling must never fail the counting
            logger.exception("Quota warnings could not be sent; the next count tries again.")


def _answered_since(holder: "QuotaHolder", since: datetime) -> int:
    return _answered[0](holder, since) if _answered else 0


def redis_key_of(scope: str, period: Period) -> str:
    return f"gatehouse:quota:{scope}:{int(period.start.timestamp())}"


def _scope_of_redis_key(redis_key: str) -> tuple[str, datetime]:
    _, _, scope, start = redis_key.split(":")
    return scope, datetime.fromtimestamp(int(start), UTC)


@dataclass(frozen=True)
class QuotaHolder:
    """Whose allowance a request draws from: a key's own (scope "k<id>", `key_id`), or the one
    a service account's keys share (scope "u<its user's id>", `pool_user_id`)."""

    scope: str
    quota: Quota
    anchor: datetime
    key_id: int | None = None
    pool_user_id: int | None = None

    def period(self, now: datetime) -> Period:
        return period_at(self.anchor, self.quota.period, now)


def pool_holder(user_id: int, quota: Quota, user_created_at: datetime) -> QuotaHolder:
    """The allowance a service account's keys share (quotaShared), its periods from the
    creation of the account's user, which the key lookup joins already."""
    return QuotaHolder(
        f"u{user_id}", quota, user_created_at.replace(microsecond=0), pool_user_id=user_id
    )


def holder_of(key: Any) -> QuotaHolder | None:
    """The quota a key draws from (its own, or its service account's shared one), or None
    for a key without one. Reads only the key's row and its user's, as the lookup loads them."""
    quota = key.quota
    if quota is None:
        return None
    if key.quota_shared:
        return pool_holder(key.user_id, quota, key.user.date_joined)
    # Periods start on a whole second: the start is in the count's name in Redis, in seconds.
    return QuotaHolder(f"k{key.pk}", quota, key.created_at.replace(microsecond=0), key_id=key.pk)


def quota_take(holder: QuotaHolder, now: datetime) -> QuotaTake:
    """What the limiter needs to take one request from `holder`'s allowance now."""
    period = holder.period(now)
    left = period.seconds_left(now)
    return QuotaTake(
        redis_key=redis_key_of(holder.scope, period),
        limit=holder.quota.requests,
        window=WINDOW_SECONDS.get(holder.quota.period),
        reset_seconds=left,
        expire_seconds=None if left is None else left + 86_400,
        rebuild=lambda: net_used_in_database(holder, period),
        take_in_database=lambda seen: _take_in_database(holder, period, seen),
        give_back_in_database=lambda: _give_back_in_database(holder, period),
        take_offline=lambda: _take_offline(holder, period),
    )


def period_counter(holder: QuotaHolder, period: Period) -> QuotaCounter:
    """The period's row, made with what the usage tables say was used when there is none."""
    try:
        return QuotaCounter.objects.get(scope=holder.scope, period_start=period.start)
    except QuotaCounter.DoesNotExist:
        pass
    used = _answered_since(holder, period.start)
    try:
        with transaction.atomic():
            return QuotaCounter.objects.create(
                scope=holder.scope, period_start=period.start, used=used
            )
    except IntegrityError:  # made by another request meanwhile
        return QuotaCounter.objects.get(scope=holder.scope, period_start=period.start)


def net_used_in_database(holder: QuotaHolder, period: Period) -> int:
    """The period's net use as PostgreSQL knows it: the most of the copy of Redis's count and
    the usage tables' answered requests, less the owners' credit. Rebuilding Redis from it
    never hands out a fresh allowance (at most the last few seconds before a crash are missing
    from both: docs/operations.md)."""
    row = QuotaCounter.objects.filter(scope=holder.scope, period_start=period.start).first()
    answered = _answered_since(holder, period.start)
    if row is None:
        return answered
    return max(row.used, answered) - row.credit


def _take_in_database(
    holder: QuotaHolder, period: Period, seen: int | None = None
) -> tuple[bool, int]:
    """One unit from the period's row, only while it is below the allowance: (admitted, net).
    `seen`: the net count this process last read in Redis, which the row is first raised to
    (its copy of Redis's count lags by up to a flush)."""
    row = period_counter(holder, period)
    limit = holder.quota.requests
    if seen is not None:
        QuotaCounter.objects.filter(pk=row.pk).update(
            used=Greatest(F("used"), Value(seen) + F("credit"))
        )
    # With Redis configured (and away), the unit is also owed to Redis's count.
    owed = 1 if settings.REDIS_URL else 0
    taken = QuotaCounter.objects.filter(pk=row.pk, used__lt=F("credit") + limit).update(
        used=F("used") + 1, offline=F("offline") + owed
    )
    row.refresh_from_db(fields=["used", "credit"])
    net = row.used - row.credit
    if taken and net * 100 >= limit * 80:  # past 80 %: maybe a warning is due
        _heard([(holder.scope, period.start, net)])
    return taken == 1, net


def _give_back_in_database(holder: QuotaHolder, period: Period) -> None:
    QuotaCounter.objects.filter(scope=holder.scope, period_start=period.start).update(
        used=F("used") - 1, offline=Greatest(F("offline") - 1, Value(0))
    )


def _take_offline(holder: QuotaHolder, period: Period) -> int:
    """The units counted here while Redis was away, reset to 0 as they go to Redis."""
    with transaction.atomic():
        row = (
            QuotaCounter.objects.select_for_update(no_key=True)
            .filter(scope=holder.scope, period_start=period.start)
            .first()
        )
        if row is None or row.offline <= 0:
            return 0
        QuotaCounter.objects.filter(pk=row.pk).update(offline=0)
        return row.offline


def quota_checkpoint() -> int:
    """Copy the counts Redis changed to PostgreSQL (never lowering what is there): what a
    rebuild after a Redis crash starts from. Runs after each usage flush; how many it copied."""
    if not settings.REDIS_URL:
        return 0
    client = redis_client()
    touched = client.spop(TOUCHED, CHECKPOINT_BATCH) or []
    names = sorted(name.decode() if isinstance(name, bytes) else name for name in touched)
    if not names:
        return 0
    copied: list[tuple[str, datetime, int]] = []
    for name, value in zip(names, client.mget(names), strict=True):
        if value is None:
            continue
        scope, start = _scope_of_redis_key(name)
        net = int(value)
        copied.append((scope, start, net))
        rows = QuotaCounter.objects.filter(scope=scope, period_start=start)
        if not rows.update(used=Greatest(F("used"), Value(net) + F("credit"))):
            try:
                with transaction.atomic():
                    QuotaCounter.objects.create(scope=scope, period_start=start, used=max(net, 0))
            except IntegrityError:
                rows.update(used=Greatest(F("used"), Value(net) + F("credit")))
    _heard(copied)
    return len(copied)


def quota_checkpoint_sweep(now: float) -> int:
    return quota_checkpoint()
