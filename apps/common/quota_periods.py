"""A quota's shape and its periods (docs/product.md §17): N requests a day, week or month, or
once for good, each period starting at the quota's anchor (the key's creation)."""

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from apps.common.validation import InvalidInput

PERIODS = ("day", "week", "month", "never")
REQUESTS_MIN, REQUESTS_MAX = 1, 1_000_000_000
# The window the RateLimit-Policy field names for each period (a month as 30 days).
WINDOW_SECONDS = {"day": 86_400, "week": 604_800, "month": 2_592_000}
_ADVERB = {"day": "a day", "week": "a week", "month": "a month", "never": "in all"}
_THIS = {"day": "today", "week": "this week", "month": "this month", "never": "in all"}


@dataclass(frozen=True)
class Quota:
    """An allowance of `requests` per `period` ("never": one allowance that does not refill)."""

    requests: int
    period: str

    def as_json(self) -> dict[str, Any]:
        return {"requests": self.requests, "period": self.period}

    def __str__(self) -> str:
        return f"{self.requests:,} requests {_ADVERB[self.period]}"

    @property
    def this_period(self) -> str:
        """ "this month", as the key list says it: "7,412 of 10,000 this month"."""
        return _THIS[self.period]

    def narrower_than(self, other: "Quota | None") -> bool:
        """Whether this quota allows no more than `other` (None: no quota at all): the same
        period with as many requests or fewer. Another period is not compared: it is a raise."""
        if other is None:
            return True
        return self.period == other.period and self.requests <= other.requests


def quota_from_json(value: Any, field: str = "quota") -> Quota | None:
    """The API's `quota` object ({"requests": N, "period": …}), or None for null."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidInput(field, f"{field} must be an object with requests and period, or null.")
    unknown = sorted(set(value) - {"requests", "period"})
    if unknown:
        raise InvalidInput(field, f"{field} has no field {unknown[0]}: give requests and period.")
    missing = [name for name in ("requests", "period") if name not in value]
    if missing:
        raise InvalidInput(field, f"{field} needs {' and '.join(missing)}.")
    return _quota(value["requests"], value["period"], field)


def quota_from_text(text: str, field: str = "quota") -> Quota | None:
    """A quota as people type it: "10000/month", "10,000 / day", "500/never"; "" or "none" for
    none."""
    cleaned = text.strip().lower()
    if cleaned in ("", "none"):
        return None
    match = re.fullmatch(r"([\d,_ ]+?)\s*/\s*([a-z]+)", cleaned)
    if match is None:
        raise InvalidInput(
            field,
            "Give the quota as requests/period, e.g. 10000/month (day, week, month or never).",
        )
    digits = re.sub(r"[,_ ]", "", match.group(1))
    return _quota(int(digits) if digits.isdigit() else -1, match.group(2), field)


def _quota(requests: Any, period: Any, field: str) -> Quota:
    if period not in PERIODS:
        raise InvalidInput(field, f"A quota's period is one of {', '.join(PERIODS)}.")
    if isinstance(requests, float) and requests.is_integer():
        requests = int(requests)  # JSON's 2755.0 is the integer 2755 (as its schema says)
    if isinstance(requests, bool) or not isinstance(requests, int):
        raise InvalidInput(field, "A quota's requests must be a whole number.")
    if not REQUESTS_MIN <= requests <= REQUESTS_MAX:
        raise InvalidInput(
            field, f"A quota allows from {REQUESTS_MIN} to {REQUESTS_MAX:,} requests a period."
        )
    return Quota(requests, period)


def add_months(moment: datetime, months: int) -> datetime:
    """`moment` `months` later, on the same day of the month or the month's last day when it
    has no such day (a quota made on the 31st refills on the 30th of April)."""
    month_index = moment.month - 1 + months
    year, month = moment.year + month_index // 12, month_index % 12 + 1
    day = min(moment.day, calendar.monthrange(year, month)[1])
    return moment.replace(year=year, month=month, day=day)


@dataclass(frozen=True)
class Period:
    """One period of a quota: from `start` to `end` (None: a one-off allowance's only one)."""

    start: datetime
    end: datetime | None

    def seconds_left(self, now: datetime) -> int | None:
        if self.end is None:
            return None
        return max(0, int((self.end - now).total_seconds() + 0.999))


def period_at(anchor: datetime, period: str, now: datetime) -> Period:
    """The period of a quota anchored at `anchor` that holds `now` (the first one before it)."""
    if period == "never" or now <= anchor:
        if period == "never":
            return Period(anchor, None)
        now = anchor
    if period in ("day", "week"):
        length = timedelta(days=1 if period == "day" else 7)
        count = (now - anchor) // length
        start = anchor + count * length
        return Period(start, start + length)
    months = (now.year - anchor.year) * 12 + now.month - anchor.month
    start = add_months(anchor, months)
    if start > now:
        months -= 1
        start = add_months(anchor, months)
    return Period(start, add_months(anchor, months + 1))
