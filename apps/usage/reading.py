"""Reading usage a day at a time. The flush writes hourly rows only (one upsert per key, hour,
operation and outcome); finished days are rolled into daily rows by the daily job
(`usage_roll_up`). So a day is read from its daily rows once it is rolled up, and from its
hourly rows until then (today, and any day the job has not reached yet)."""

from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db.models import Max, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from .models import KeyUsageDay, KeyUsageHour

ONE_DAY = timedelta(days=1)


def rolled_through(today: date | None = None) -> date | None:
    """The last day whose daily rows are complete: the latest rolled-up day, never today."""
    latest = KeyUsageDay.objects.aggregate(latest=Max("day"))["latest"]
    if latest is None:
        return None
    return min(latest, (today or timezone.now().date()) - ONE_DAY)


def start_of(day: date) -> datetime:
    """Midnight UTC at the start of `day` (days are UTC days)."""
    return datetime.combine(day, time(), UTC)


def daily_rows(
    fields: Sequence[str], first: date, last: date, **where: Any
) -> Iterator[dict[str, Any]]:
    """Requests summed by `fields` (any of "day", "key_id", "operation", "outcome") over the
    days `first` to `last`, for the rows matching `where` (say `key=key` or
    `key__workspace=workspace`): each row the fields plus "total". The rolled-up days come
    first, then the days still in hourly rows, each part ordered by `fields`. With "day" among
    the fields the two parts never share a row; without it a caller adds them up."""
    through = rolled_through()
    if through is not None and through >= first:
        yield from (
            KeyUsageDay.objects.filter(**where, day__gte=first, day__lte=min(through, last))
            .values(*fields)
            .annotate(total=Sum("count"))
            .order_by(*fields)
            .iterator(chunk_size=2000)
        )
    hours_from = max(first, through + ONE_DAY) if through is not None else first
    if hours_from > last:
        return
    hours = KeyUsageHour.objects.filter(
        **where, hour__gte=start_of(hours_from), hour__lt=start_of(last + ONE_DAY)
    )
    if "day" in fields:
        hours = hours.annotate(day=TruncDate("hour", tzinfo=UTC))
    yield from (
        hours.values(*fields)
        .annotate(total=Sum("count"))
        .order_by(*fields)
        .iterator(chunk_size=2000)
    )
