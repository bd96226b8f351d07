"""One date system on the pages: a moment names its zone once, date fields read and take
"Nov 26, 2026" (never the browser's mm/dd/yyyy), and lists give the moment with how long ago."""

import re
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.api_keys.services import api_key_revoke
from apps.audit.services import Actor
from tests.factories import make_key

from .test_views import NEW, create

pytestmark = pytest.mark.django_db

TWICE = re.compile(r"\b(UTC|CET) \(?(UTC|CET|Europe/Berlin)\)?")


def text_of(response) -> str:
    return re.sub(r"<[^>]+>", "", response.content.decode())


@time_machine.travel("2026-11-22 10:00:00Z", tick=False)
def test_the_secret_once_page_names_the_zone_once(client, owner):
    page = text_of(create(client, expiry="30"))
    assert "Dec 22, 2026 10:00 UTC (" in page  # how long ahead beside it
    assert not TWICE.search(page), TWICE.search(page)


@time_machine.travel("2026-11-22 10:00:00Z", tick=False)
def test_the_custom_expiry_is_typed_as_the_pages_write_a_day(client, owner):
    form = client.get(NEW).content.decode()
    assert 'type="date"' not in form
    assert "Nov 23, 2026 to Nov 22, 2027" in text_of(client.get(NEW))
    create(client, expiry="custom", custom_date="Dec 24, 2026")
    assert ApiKey.objects.get().expires_at.isoformat().startswith("2026-12-24T23:59:59")
    refused = create(client, name="Other", expiry="custom", custom_date="12/24/2026")
    assert "Write the date as Nov 26, 2026 (or 2026-11-26)." in refused.content.decode()
    assert "Pick the date" not in refused.content.decode()
    assert ApiKey.objects.count() == 1


def test_logs_and_audit_take_and_show_days_as_the_pages_write_them(client, owner):
    for page in ("/logs/", "/audit/"):
        html = client.get(page, {"since": "2026-11-01", "until": "Nov 26, 2026"}).content.decode()
        assert 'type="date"' not in html
        assert 'name="since" value="Nov 1, 2026"' in html
        assert 'name="until" value="Nov 26, 2026"' in html
        assert "ignored" not in text_of(client.get(page, {"since": "Nov 1, 2026"})).lower()


def test_the_audit_range_is_read_from_either_way_of_writing_a_day(client, owner):
    make_key(user=owner, name="Seen")
    today = timezone.localdate()
    inside = client.get("/audit/", {"since": f"{today:%b} {today.day}, {today:%Y}"})
    outside = client.get("/audit/", {"until": (today - timedelta(days=2)).isoformat()})
    # The key's name in the filter's list, and once more for its event in range.
    assert text_of(inside).count("Seen") == text_of(outside).count("Seen") + 1


def test_a_revoked_keys_blast_radius_takes_since_as_the_page_writes_it(client, owner):
    key = make_key(user=owner, name="Gone").key
    api_key_revoke(key=key, actor=Actor.of_user(owner))
    page = client.get(f"/integrations/api/keys/{key.pk}/").content.decode()
    assert 'type="datetime-local"' not in page
    shown = re.search(r'name="since" value="([^"]+)"', page).group(1)
    assert re.fullmatch(r"\w{3} \d+, \d{4} \d\d:\d\d UTC", shown)
    asked = client.get(f"/integrations/api/keys/{key.pk}/", {"since": "Nov 2, 2026 06:47 UTC"})
    assert "Every request it made since Nov 2, 2026 06:47 UTC" in text_of(asked)


def test_history_and_team_give_the_moment_with_how_long_ago_in_its_tooltip(client, owner):
    key = make_key(user=owner, name="Timed").key
    page = client.get(f"/integrations/api/keys/{key.pk}/").content.decode()
    created = key.created_at.astimezone(timezone.get_current_timezone())
    moment = f"{created:%b} {created.day}, {created:%Y %H:%M} UTC"
    assert re.search(rf'<time datetime="[^"]+" title="[^"]+">{moment}</time>', page)
    team = client.get("/settings/team/").content.decode()
    assert re.search(r'<time datetime="[^"]+" title="[^"]+">\w{3} \d+, \d{4} \d\d:\d\d UTC', team)
