"""A quota's current period drawn against its allowance (docs/product.md §17): the requests it
counted so far, added up hour by hour (a daily quota) or day by day, under a line at the
allowance, for the key's page. The hours and days are the period's own, from its start to the
minute (a key made at 14:30 has days from 14:30), each named by its start. Server-rendered
SVG like the other charts (apps/usage/charts.py), with its numbers in a table beside it."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Sum
from django.utils import timezone

from apps.quotas.counting import QuotaHolder
from apps.quotas.uses import QuotaUse

from .answered import counted_hours
from .charts import BOTTOM, HEIGHT, TOP, WIDTH, Bar, Segment

NEVER_DAYS_SHOWN = 60  # a one-off allowance: its last 60 days


@dataclass(frozen=True)
class QuotaChart:
    title: str
    bars: list[Bar]  # each: what the period had counted by its end (drawn ones only)
    slots: int  # the period's hours or days, drawn or still to come
    unit: str  # "hour" or "day"
    allowance: int
    counted: int
    width: int = WIDTH
    height: int = HEIGHT

    @property
    def baseline(self) -> int:
        return HEIGHT - BOTTOM

    @property
    def top(self) -> int:
        return max(self.allowance, self.counted, 1)

    @property
    def allowance_y(self) -> float:
        return round(HEIGHT - BOTTOM - (HEIGHT - TOP - BOTTOM) * self.allowance / self.top, 2)

    @property
    def ticks(self) -> list[str]:
        labels = [bar.label for bar in self.bars]
        last = len(labels) - 1
        return [labels[round(n * last / 3)] for n in range(4)] if last >= 3 else labels


def quota_chart(holder: QuotaHolder, use: QuotaUse, now: datetime | None = None) -> QuotaChart:
    """The current period of `holder`'s quota, from the usage tables' counted requests (those
    of the hour the period began in, in full: as a rebuild counts them)."""
    now = now or timezone.now()
    period = use.period
    unit, step = (
        ("hour", timedelta(hours=1)) if use.quota.period == "day" else ("day", timedelta(days=1))
    )
    start = period.start
    if period.end is None:  # one allowance for good: its recent days
        start = max(start, now - NEVER_DAYS_SHOWN * step)
    end = period.end or now
    slots = max(1, -(-(end - start) // step))
    drawn = min(slots, int((now - start) // step) + 1)
    per_slot = [0] * drawn
    rows = counted_hours(holder, start).filter(hour__lte=now).values("hour")
    for row in rows.annotate(total=Sum("count")):
        index = min(drawn - 1, max(0, int((row["hour"] - start) // step)))
        per_slot[index] += row["total"]
    room, slot_width = HEIGHT - TOP - BOTTOM, WIDTH / slots
    counted, bars = 0, []
    top = max(use.quota.requests, sum(per_slot), 1)
    for index, count in enumerate(per_slot):
        counted += count
        moment = timezone.localtime(start + index * step)
        label = moment.strftime("%H:%M" if unit == "hour" else "%b %-d")
        height = round(room * counted / top, 2)
        bars.append(
            Bar(
                label=label,
                total=counted,
                counts={"2xx": count},
                x=round(index * slot_width + slot_width * 0.12, 2),
                width=round(slot_width * 0.76, 2),
                segments=[Segment("2xx", counted, round(HEIGHT - BOTTOM - height, 2), height)]
                if counted
                else [],
            )
        )
    title = f"This period against its allowance of {use.quota.requests:,}"
    return QuotaChart(title, bars, slots, unit, use.quota.requests, counted)
