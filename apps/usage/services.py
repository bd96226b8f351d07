"""Keeping usage rows as long as they are useful: finished days rolled up from their hours,
hours kept 90 days, days 13 months."""

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from apps.common.wording import pluralize

from .models import KeyNetwork, KeyUsageDay, KeyUsageHour
from .reading import ONE_DAY, rolled_through, start_of

HOURS_KEPT = timedelta(days=90)
DAYS_KEPT = timedelta(days=396)  # 13 months
NETWORKS_KEPT = timedelta(days=396)


@dataclass(frozen=True)
class Pruned:
    hours: int
    days: int
    networks: int


def usage_roll_up(now: datetime | None = None) -> list[date]:
    """Write the daily rows of each finished day not yet rolled up, from its hourly rows, and
    return those days. The last rolled-up day is rolled again, so counts flushed just after
    midnight are not left out; a day's rows are replaced whole, so running it twice changes
    nothing. Days whose hours are already pruned are beyond reach."""
    today = (now or timezone.now()).date()
    oldest_whole = (start_of(today) - HOURS_KEPT).date() + ONE_DAY
    through = rolled_through(today)
    day = max(through if through is not None else oldest_whole, oldest_whole)
    if through is None:
        first_hour = KeyUsageHour.objects.order_by("hour").values_list("hour", flat=True).first()
        day = max(day, first_hour.date()) if first_hour else today
    rolled = []
    while day < today:
        _roll_up_day(day)
        rolled.append(day)
        day += ONE_DAY
    return rolled


def _roll_up_day(day: date) -> None:
    days = connection.ops.quote_name(KeyUsageDay._meta.db_table)
    hours = connection.ops.quote_name(KeyUsageHour._meta.db_table)
    ops = connection.ops
    with transaction.atomic(), connection.cursor() as cursor:
        KeyUsageDay.objects.filter(day=day).delete()
        cursor.execute(
            f"INSERT INTO {days} (key_id, day, operation, outcome, count) "  # noqa: S608
            f"SELECT key_id, %s, operation, outcome, SUM(count) FROM {hours} "
            "WHERE hour >= %s AND hour < %s GROUP BY key_id, operation, outcome",
            [
                ops.adapt_datefield_value(day),
                ops.adapt_datetimefield_value(start_of(day)),
                ops.adapt_datetimefield_value(start_of(day + ONE_DAY)),
            ],
        )


def usage_prune(now: datetime | None = None) -> Pruned:
    """Delete hourly rows older than 90 days, daily rows older than 13 months, and networks not
    seen for 13 months. Idempotent: the daily job runs it, then `usage_roll_up`."""
    now = now or timezone.now()
    hours, _ = KeyUsageHour.objects.filter(hour__lt=now - HOURS_KEPT).delete()
    days, _ = KeyUsageDay.objects.filter(day__lt=(now - DAYS_KEPT).date()).delete()
    networks, _ = KeyNetwork.objects.filter(last_seen__lt=now - NETWORKS_KEPT).delete()
    return Pruned(hours=hours, days=days, networks=networks)


def usage_daily() -> str:
    """The daily job: prune, then roll up the finished days."""
    from .moving import usage_moves_prune

    usage_moves_prune()
    pruned = usage_prune()
    rolled = usage_roll_up()
    return f"pruned {pruned}, rolled up {len(rolled)} day{pluralize(len(rolled))}"
