"""One way to write a date (apps/common/dates.py)."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from django.template import Context, Template
from django.utils import timezone

from apps.common.dates import ago, day_text, moment_text


def test_a_moment_says_its_zone_and_a_day_has_no_time():
    at = datetime(2027, 11, 25, 14, 2, tzinfo=UTC)
    assert moment_text(at, UTC) == "Nov 25, 2027 14:02 UTC"
    assert moment_text(at, ZoneInfo("Europe/Berlin")) == "Nov 25, 2027 15:02 CET"
    assert day_text(at.date()) == "Nov 25, 2027"


def test_a_year_ahead_reads_as_a_year_not_eleven_months_and_four_weeks():
    now = timezone.now()
    assert ago(now + timedelta(days=365)) == "in a year"
    assert ago(now + timedelta(days=200)) == "in 7 months"
    assert ago(now + timedelta(days=800)) == "in 2 years"
    assert ago(now - timedelta(days=61)) == "2 months ago"
    assert ago(now - timedelta(minutes=3)).replace("\xa0", " ") == "3 minutes ago"


def test_every_template_has_the_filters_without_loading_them():
    rendered = Template("{{ when|moment }} · {{ when|day }}").render(
        Context({"when": datetime(2027, 1, 5, 9, 30, tzinfo=UTC)})
    )
    assert rendered == "Jan 5, 2027 09:30 UTC · Jan 5, 2027"
