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


def test_one_month_reads_as_a_month_never_1_months():
    now = timezone.now()
    assert ago(now - timedelta(days=40)) == "a month ago"
    assert ago(now + timedelta(days=35)) == "in a month"


def test_every_template_has_the_filters_without_loading_them():
    rendered = Template("{{ when|moment }} · {{ when|day }}").render(
        Context({"when": datetime(2027, 1, 5, 9, 30, tzinfo=UTC)})
    )
    assert rendered == "Jan 5, 2027 09:30 UTC · Jan 5, 2027"


def test_a_day_is_read_as_the_pages_write_it_or_as_iso():
    from datetime import date

    from apps.common.dates import parse_day_text

    for text in ("Nov 26, 2026", "nov 26 2026", "November 26, 2026", "26 Nov 2026", "2026-11-26"):
        assert parse_day_text(text) == date(2026, 11, 26), text
    for text in ("11/26/2026", "Nov 31, 2026", "1999-12-31", "", "２０２６-11-26", "x" * 100):
        assert parse_day_text(text) is None, text


def test_a_moment_is_read_in_the_zone_the_page_names():
    from apps.common.dates import parse_moment_text

    berlin = ZoneInfo("Europe/Berlin")
    expected = datetime(2026, 11, 26, 5, 47, tzinfo=UTC)
    assert parse_moment_text("Nov 26, 2026 06:47 CET", berlin) == expected
    assert parse_moment_text("Nov 26, 2026 06:47", berlin) == expected
    assert parse_moment_text("2026-11-26T06:47", berlin) == expected
    for text in ("Nov 26, 2026 06:47 UTC", "Nov 26, 2026 25:00", "Nov 26, 2026", "soon"):
        assert parse_moment_text(text, berlin) is None, text


def test_when_gives_the_moment_with_how_long_ago_in_its_tooltip():
    at = timezone.now() - timedelta(days=3)
    rendered = Template("{{ at|when }}").render(Context({"at": at}))
    assert f'<time datetime="{at.isoformat()}" title="3\xa0days ago">' in rendered
    assert rendered.endswith(f"{moment_text(at)}</time>")


def test_a_span_is_rounded_to_the_nearest_unit_as_the_cli_rounds_it():
    from gatehouse_cli.text import relative

    now = timezone.now()
    spans = {
        timedelta(days=4, hours=23): "in 5 days",
        timedelta(days=90) - timedelta(seconds=5): "in 3 months",  # a fresh 90-day key
        timedelta(days=29, hours=23): "in 30 days",
        -timedelta(hours=2, minutes=40): "3 hours ago",
        -timedelta(minutes=59, seconds=40): "1 hour ago",
        -timedelta(hours=23, minutes=50): "1 day ago",
        -timedelta(seconds=20): "just now",
        timedelta(days=200): "in 7 months",
    }
    for span, words in spans.items():
        assert ago(now + span).replace("\xa0", " ") == words, span
        assert relative(now + span, now) == words, span
