"""One way to write a date everywhere people read one (pages, e-mails, operator commands):
"Nov 25, 2027" for a day, "Nov 25, 2027 14:02 UTC" for a moment, always with its zone (the
workspace's, active on its pages). CSV keeps ISO 8601, which programs read. Registered as
template built-ins (settings.TEMPLATES), so every template has `|day`, `|moment` and `|ago`."""

from datetime import date, datetime, timedelta

from django import template
from django.contrib.humanize.templatetags.humanize import naturaltime
from django.utils import timezone

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
    """ "3 minutes ago", "2 days from now"; beyond a month in whole months or years ("in 12
    months", "2 years ago"), where Django's naturaltime says "11 months, 4 weeks from now"."""
    if not value:
        return ""
    span = value - timezone.now()
    if abs(span) <= RELATIVE_WITHIN:
        return str(naturaltime(value))
    days = abs(span).days
    months = round(days / 30.44)
    amount = f"{months} months" if months < 12 else _years(days)
    return f"in {amount}" if span > timedelta(0) else f"{amount} ago"


def _years(days: int) -> str:
    years = round(days / 365.25)
    return "a year" if years == 1 else f"{years} years"
