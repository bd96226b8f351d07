"""Usage as people read it: series of requests a day or an hour, stacked by outcome, drawn as
server-rendered SVG bar charts (no script, no inline style: the CSP holds), each with the table
of its numbers beside it for screen readers and for copying."""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from django.db.models import QuerySet, Sum
from django.utils import timezone

from .models import OUTCOMES, KeyUsageHour
from .reading import daily_rows

OUTCOME_LABELS = {
    "2xx": "Succeeded",
    "4xx": "Bad request",
    "5xx": "Server error",
    "401": "Refused: key",
    "403": "Refused: permission",
    "429": "Refused: rate limit",
}
WIDTH, HEIGHT, TOP, BOTTOM = 600, 160, 8, 20  # the SVG's viewBox, in its own units


@dataclass(frozen=True)
class Segment:
    outcome: str
    count: int
    y: float
    height: float


@dataclass(frozen=True)
class Bar:
    label: str  # "Nov 24" or "14:00"
    total: int
    counts: dict[str, int]
    x: float
    width: float
    segments: list[Segment]


@dataclass(frozen=True)
class Chart:
    title: str
    bars: list[Bar]
    outcomes: list[str]  # those that occur, in OUTCOMES order
    peak: int
    total: int
    width: int = WIDTH
    height: int = HEIGHT

    @property
    def legend(self) -> list[tuple[str, str]]:
        return [(outcome, OUTCOME_LABELS[outcome]) for outcome in self.outcomes]

    @property
    def ticks(self) -> list[Bar]:
        """Six labelled bars along the axis, the first and the last among them."""
        last = len(self.bars) - 1
        return [self.bars[round(n * last / 5)] for n in range(6)] if last >= 5 else self.bars

    @property
    def baseline(self) -> int:
        return HEIGHT - BOTTOM


def _chart(title: str, labelled: list[tuple[str, dict[str, int]]]) -> Chart:
    present = [o for o in OUTCOMES if any(counts.get(o) for _, counts in labelled)]
    peak = max((sum(counts.values()) for _, counts in labelled), default=0)
    room = HEIGHT - TOP - BOTTOM
    slot = WIDTH / max(1, len(labelled))
    bars = []
    for index, (label, counts) in enumerate(labelled):
        bottom = float(HEIGHT - BOTTOM)
        segments = []
        for outcome in present:
            count = counts.get(outcome, 0)
            if count:
                height = room * count / peak
                bottom -= height
                segments.append(Segment(outcome, count, round(bottom, 2), round(height, 2)))
        bars.append(
            Bar(
                label=label,
                total=sum(counts.values()),
                counts={o: counts.get(o, 0) for o in present},
                x=round(index * slot + slot * 0.12, 2),
                width=round(slot * 0.76, 2),
                segments=segments,
            )
        )
    return Chart(title, bars, present, peak, sum(bar.total for bar in bars))


def _by_period(rows: Iterable[Mapping[str, Any]], field: str) -> dict[Any, dict[str, int]]:
    series: dict[Any, dict[str, int]] = defaultdict(dict)
    for row in rows:
        series[row[field]][row["outcome"]] = row["total"]
    return series


def daily_chart(*, today: date, title: str, span: int = 30, **where: Any) -> Chart:
    """Requests a day over the last `span` days (today included) of the usage rows matching
    `where`, stacked by outcome."""
    first = today - timedelta(days=span - 1)
    series = _by_period(daily_rows(("day", "outcome"), first, today, **where), "day")
    labelled = [
        ((day := first + timedelta(days=n)).strftime("%b %-d"), series.get(day, {}))
        for n in range(span)
    ]
    return _chart(title, labelled)


def hourly_chart(hours: QuerySet[KeyUsageHour], *, now: datetime, title: str) -> Chart:
    """Requests an hour over the last 24 hours (this one included), stacked by outcome; the
    hours named in the current time zone."""
    this_hour = now.replace(minute=0, second=0, microsecond=0)
    first = this_hour - timedelta(hours=23)
    rows = (
        hours.filter(hour__gte=first, hour__lte=this_hour)
        .values("hour", "outcome")
        .annotate(total=Sum("count"))
    )
    series = _by_period(rows, "hour")
    labelled = []
    for n in range(24):
        hour = first + timedelta(hours=n)
        labelled.append((timezone.localtime(hour).strftime("%H:00"), series.get(hour, {})))
    return _chart(title, labelled)
