import re

import pytest
import time_machine

from apps.workspaces.models import Membership
from tests.conftest import auth
from tests.factories import MembershipFactory, WorkspaceFactory, make_key, owner_of

pytestmark = pytest.mark.django_db
URL = "/settings/"


@pytest.fixture
def workspace():
    return WorkspaceFactory(name="Acme", plan="pro")


@pytest.fixture
def owner(client, workspace):
    user = owner_of(workspace)
    client.force_login(user)
    return user


def form(**overrides):
    data = {
        "name": "Acme",
        "timezone": "UTC",
        "transcription_language": "en",
        "default_video_quality": "720p",
        "key_max_lifetime_days": "365",
        "key_allow_no_expiry": "on",
        "key_approval": "off",
    }
    data.update(overrides)
    return data


def test_settings_change_shows_in_the_api_at_once(client, owner, workspace):
    created = make_key(user=owner, workspace=workspace)
    response = client.post(
        URL,
        form(
            name="Acme Academy",
            timezone="Asia/Tokyo",
            auto_transcribe_uploads="on",
            transcription_language="ja",
            default_video_quality="1080p",
        ),
    )
    assert response.status_code == 302
    record = client.get("/api/v1/workspace", **auth(created.secret)).json()
    assert record["workspaceName"] == "Acme Academy"
    assert record["timezone"] == "Asia/Tokyo"
    assert record["autoTranscribeUploads"] is True
    assert record["transcriptionLanguage"] == "ja"
    workspace.refresh_from_db()
    assert workspace.default_video_quality == "1080p"


@time_machine.travel("2026-07-01 12:00:00Z", tick=False)
def test_canonical_timezones_are_offered_grouped_with_their_offset(client, owner, workspace):
    page = client.get(URL).content.decode()
    assert '<optgroup label="America">' in page
    berlin = re.search(r'<option value="Europe/Berlin" data-keywords="([^"]*)">([^<]*)<', page)
    assert berlin.group(2) == "Berlin (UTC+02:00)"  # summer time
    assert "stockholm" in berlin.group(1) and "germany" in berlin.group(1)  # what finds it
    kolkata = re.search(r'<option value="Asia/Kolkata" data-keywords="([^"]*)">([^<]*)<', page)
    assert kolkata.group(2) == "Kolkata (UTC+05:30)" and "calcutta" in kolkata.group(1)
    assert 'value="America/Argentina/Buenos_Aires"' in page
    assert 'value="US/Pacific"' not in page and 'value="Factory"' not in page  # no aliases
    assert 'data-filters="#id_timezone"' in page  # the search box
    # A workspace already on a legacy name keeps it, shown on its own.
    workspace.timezone = "US/Pacific"
    workspace.save()
    page = client.get(URL).content.decode()
    assert '<optgroup label="Current setting">' in page
    assert (
        '<option value="US/Pacific" data-keywords="" selected>US/Pacific (UTC−07:00)</option>'
        in (page)
    )


def test_video_quality_is_capped_by_the_plan_and_marked_dashboard_only(client, owner, workspace):
    page = client.get(URL).content.decode()
    assert '<option value="1080p">1080p (Full HD)</option>' in page  # the Pro plan's ceiling
    assert '<option value="2160p" disabled>2160p (4K), with the Business plan</option>' in page
    assert "Not available through the API" in page
    response = client.post(URL, form(default_video_quality="2160p"))
    assert response.status_code == 200
    workspace.refresh_from_db()
    assert workspace.default_video_quality == "720p"


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"name": "   "}, "This field is required"),
        ({"name": "x" * 101}, "at most 100 characters"),
        ({"timezone": "Mars/Olympus"}, "Select a valid choice"),
        ({"transcription_language": "xx"}, "Select a valid choice"),
    ],
)
def test_invalid_settings_show_errors_and_save_nothing(
    client, owner, workspace, overrides, message
):
    response = client.post(URL, form(**overrides))
    assert response.status_code == 200
    assert message in response.content.decode()
    workspace.refresh_from_db()
    assert workspace.name == "Acme"


def test_settings_and_api_refuse_the_same_name_with_the_same_reason(client, owner, workspace):
    created = make_key(user=owner, workspace=workspace)
    page = client.post(URL, form(name="bad\x07name")).content.decode()
    api = client.patch(
        "/api/v1/workspace",
        {"workspaceName": "bad\x07name"},
        content_type="application/json",
        **auth(created.secret),
    ).json()["message"]
    assert "must not contain control or invisible formatting characters" in page
    assert "must not contain control or invisible formatting characters" in api


def test_only_owners_change_settings(client, workspace):
    admin = MembershipFactory(workspace=workspace, role=Membership.Role.ADMIN).user
    client.force_login(admin)
    assert client.get(URL).status_code == 403
    assert client.post(URL, form(name="Admin was here")).status_code == 403
    workspace.refresh_from_db()
    assert workspace.name == "Acme"


def test_stranger_changes_only_their_own_workspace(client, workspace):
    stranger = owner_of(WorkspaceFactory(name="Elsewhere"))
    client.force_login(stranger)
    client.post(URL, form(name="Hijacked"))
    workspace.refresh_from_db()
    assert workspace.name == "Acme"


def test_the_idle_limit_is_set_and_cleared_on_the_settings_page(client, owner, workspace):
    assert client.post(URL, form(key_idle_days="90")).status_code == 302
    workspace.refresh_from_db()
    assert workspace.key_idle_days == 90
    refused = client.post(URL, form(key_idle_days="20", name="Renamed"))
    assert "Ensure this value is greater than or equal to 30" in refused.content.decode()
    workspace.refresh_from_db()
    assert (workspace.key_idle_days, workspace.name) == (90, "Acme")
    assert client.post(URL, form(key_idle_days="")).status_code == 302
    workspace.refresh_from_db()
    assert workspace.key_idle_days is None
