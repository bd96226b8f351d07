"""Owners topping up a key's quota, or setting what is left of its period (docs/product.md §17):
PostgreSQL's credit for the period, and Redis's count when it holds one."""

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import F

from apps.common.quota_periods import REQUESTS_MAX
from apps.common.validation import InvalidInput
from apps.metering.quotas import quota_give_back

from .counting import QuotaHolder, period_counter, redis_key_of
from .models import QuotaCounter
from .uses import QuotaUse, quota_uses


def quota_change_left(
    holder: QuotaHolder,
    now: datetime,
    *,
    add: int | None = None,
    set_to: int | None = None,
    audit: Callable[[QuotaUse, QuotaUse], None],
) -> QuotaUse:
    """Add `add` to what is left of the current period, or make it `set_to`; what is left now.
    `audit(before, after)` runs in the change's transaction.

    InvalidInput unless exactly one of them is given, a whole number from 0 (set) or 1 (add)
    up to 10⁹.
    """
    if (add is None) == (set_to is None):
        raise InvalidInput("body", "Give add or set, not both.")
    field, amount = ("add", add) if add is not None else ("set", set_to)
    if isinstance(amount, bool) or not isinstance(amount, int):
        raise InvalidInput(field, f"{field} must be a whole number.")
    lowest = 1 if field == "add" else 0
    if not lowest <= amount <= REQUESTS_MAX:
        raise InvalidInput(field, f"{field} must be from {lowest} to {REQUESTS_MAX:,}.")
    period = holder.period(now)
    with transaction.atomic():
        row = period_counter(holder, period)
        QuotaCounter.objects.select_for_update(no_key=True).get(pk=row.pk)
        before = quota_uses([holder], now)[holder.scope]
        delta = amount if field == "add" else amount - before.left
        QuotaCounter.objects.filter(pk=row.pk).update(credit=F("credit") + delta)
        after = replace(before, used=before.used - delta)
        audit(before, after)
        if settings.REDIS_URL and delta:  # the count Redis holds (a lost one is rebuilt)
            redis_key = redis_key_of(holder.scope, period)
            transaction.on_commit(lambda: quota_give_back(redis_key, delta))
    return after
