"""One way to write a date everywhere people read one (pages, e-mails, operator commands):
"Nov 25, 2027" for a day, "Nov 25, 2027 14:02 UTC" for a moment, always with its zone (the
workspace's, active on its pages). CSV keeps ISO 8601, which programs read. Registered as
template built-ins (settings.TEMPLATES), so every template has `|day`, `|moment`, `|ago` and
`|when` (the moment, its relative time in a tooltip). Date fields read and take the same words:
`parse_day_text` and `parse_moment_text` read what `day_text` and `moment_text` write (and ISO
8601), so a field shows "Nov 26, 2026", never the browser's "mm/dd/yyyy"."""

import re
from datetime import date, datetime, timedelta, tzinfo

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()

RELATIVE_WITHIN = timedelta(days=30)


def day_text(value: date | datetime) -> str:
    if isinstance(value, datetime):
        value = timezone.localtime(value) if timezone.is_aware(value) else value
    return f"{value:%b} {value.day}, {value:%Y}"


def moment_text(value: datetime, zone: object = None) -> str:
    """`value` in `zone` (default: the active time zone), with the zone's name."""
    local = timezone.localtime(value, zone) if timezone.is_aware(value) else value  # type: ignore[arg-type]
    name = local.tzname() or ""
    return f"{local:%b} {local.day}, {local:%Y %H:%M} {name}".rstrip()


@register.filter
def day(value: date | datetime | None) -> str:
    return day_text(value) if value else ""


@register.filter
def moment(value: datetime | None) -> str:
    return moment_text(value) if value else ""


@register.filter
def ago(value: datetime | None) -> str:
    """ "3 minutes ago", "in 5 days": one unit, rounded to the nearest (4 days 23 hours is "in 5
    days", where Django's naturaltime says "4 days, 23 hours from now"); beyond a month in
    whole months or years ("in 3 months", "2 years ago"). The CLI's `relative` says the same."""
    if not value:
        return ""
    span = value - timezone.now()
    if abs(span) <= RELATIVE_WITHIN:
        return _within_a_month(span.total_seconds())
    days = abs(span).days
    months = round(days / 30.44)
    if months >= 12:
        amount = _years(days)
    else:
        amount = "a month" if months <= 1 else f"{months} months"  # never "1 months"
    return f"in {amount}" if span > timedelta(0) else f"{amount} ago"


def _within_a_month(seconds: float) -> str:
    amount = abs(seconds)
    if amount < 60:
        return "just now" if seconds <= 0 else "in a moment"
    count, unit = round(amount / 60), "minute"
    if count >= 60:
        count, unit = round(amount / 3600), "hour"
    if count >= 24 and unit == "hour":
        count, unit = round(amount / 86400), "day"
    words = f"{count}\xa0{unit}{'s' if count != 1 else ''}"  # never broken between the two
    return f"in {words}" if seconds > 0 else f"{words} ago"


def _years(days: int) -> str:
    years = round(days / 365.25)
    return "a year" if years == 1 else f"{years} years"


@register.filter
def when(value: datetime | None) -> SafeString | str:
    """The moment, its zone named once, with how long ago (or ahead) in its tooltip."""
    if not value:
        return ""
    return format_html(
        '<time datetime="{}" title="{}">{}</time>',
        value.isoformat(),
        ago(value),
        moment_text(value),
    )


DAY_FORMATS = ("%b %d, %Y", "%b %d %Y", "%B %d, %Y", "%B %d %Y", "%d %b %Y", "%d %B %Y")
EARLIEST_YEAR, LATEST_YEAR = 2000, 9998


def parse_day_text(value: object) -> date | None:
    """A day as the pages write it ("Nov 26, 2026"), or as ISO 8601 (2026-11-26); None for
    anything else, or a year outside 2000 to 9998."""
    if not isinstance(value, str) or not value.isascii() or len(value) > 40:
        return None
    text = " ".join(value.replace(",", ", ").split()).replace(" ,", ",")
    found = None
    for form in ("%Y-%m-%d", *DAY_FORMATS):
        try:
            found = datetime.strptime(text, form).date()
            break
        except ValueError:
            continue
    return found if found and EARLIEST_YEAR <= found.year <= LATEST_YEAR else None


# "Nov 26, 2026 06:47", a zone's abbreviation after it allowed ("UTC", "CET", "+04").
MOMENT = re.compile(
    r"^(?P<day>.+?)[ T](?P<hour>\d{1,2}):(?P<minute>\d{2})(?: (?P<zone>[A-Za-z+\-0-9]+))?$"
)


def parse_moment_text(value: object, zone: tzinfo) -> datetime | None:
    """A moment as the pages write it ("Nov 26, 2026 06:47 UTC") or as the browser's picker
    and ISO 8601 write it (2026-11-26T06:47), in `zone`; None for anything else. A zone named
    after the time must be `zone`'s own (the pages say which zone their times are in)."""
    if not isinstance(value, str) or not value.isascii() or len(value) > 60:
        return None
    found = MOMENT.match(" ".join(value.split()))
    if not found:
        return None
    day = parse_day_text(found["day"])
    hour, minute = int(found["hour"]), int(found["minute"])
    if day is None or hour > 23 or minute > 59:
        return None
    moment = datetime(day.year, day.month, day.day, hour, minute, tzinfo=zone)
    if found["zone"] and found["zone"] != moment.tzname():
        return None
    return moment


@register.filter
def day_field(value: str) -> str:
    """A date field's value as the pages write a day; what it cannot read, as it was typed."""
    day = parse_day_text(value)
    return day_text(day) if day else value
