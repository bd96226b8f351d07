import json

import pytest

from apps.workspaces.models import Workspace
from tests.conftest import auth
from tests.factories import WorkspaceFactory, make_key, owner_of

pytestmark = pytest.mark.django_db
URL = "/api/v1/workspace"


@pytest.fixture
def workspace():
    return WorkspaceFactory(
        name="Acme",
        timezone="UTC",
        auto_transcribe_uploads=False,
        transcription_language="en",
        default_video_quality="720p",
    )


@pytest.fixture
def writer(workspace):
    return make_key(user=owner_of(workspace), workspace=workspace, scopes=["pages:write"])


def patch(client, secret, body):
    data = body if isinstance(body, str) else json.dumps(body)
    return client.patch(URL, data, content_type="application/json", **auth(secret))


def snapshot(workspace):
    return Workspace.objects.filter(pk=workspace.pk).values().get()


def assert_invalid(response, field_hint):
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid-input"
    assert field_hint in body["message"]


def test_patch_changes_every_settable_field(client, workspace, writer):
    response = patch(
        client,
        writer.secret,
        {
            "workspaceName": "  Acme Academy  ",
            "timezone": "America/Argentina/Buenos_Aires",
            "autoTranscribeUploads": True,
            "transcriptionLanguage": "de",
        },
    )
    assert response.status_code == 200
    record = response.json()
    assert record["workspaceName"] == "Acme Academy"
    assert record["timezone"] == "America/Argentina/Buenos_Aires"
    assert record["autoTranscribeUploads"] is True
    assert record["transcriptionLanguage"] == "de"
    assert set(record) == {
        "workspaceId",
        "workspaceName",
        "userEmail",
        "scopes",
        "timezone",
        "autoTranscribeUploads",
        "transcriptionLanguage",
    }
    workspace.refresh_from_db()
    assert workspace.name == "Acme Academy"


@pytest.mark.parametrize("scope", ["products:write", "communities:write", "pages:write"])
def test_any_write_scope_may_patch(client, workspace, scope):
    created = make_key(user=owner_of(workspace), workspace=workspace, scopes=[scope])
    assert patch(client, created.secret, {"autoTranscribeUploads": True}).status_code == 200


def test_only_present_fields_are_written(client, workspace, writer):
    Workspace.objects.filter(pk=workspace.pk).update(transcription_language="fr")
    # The key's cached workspace still says "en"; the PATCH must not write it back.
    patch(client, writer.secret, {"timezone": "Asia/Tokyo"})
    workspace.refresh_from_db()
    assert (workspace.timezone, workspace.transcription_language) == ("Asia/Tokyo", "fr")


def test_videosettings_is_refused_and_nothing_is_written(client, workspace, writer):
    before = snapshot(workspace)
    response = patch(client, writer.secret, {"timezone": "Asia/Tokyo", "videoSettings": "1080p"})
    assert_invalid(response, "videoSettings")
    assert "only in the dashboard" in response.json()["message"]
    assert snapshot(workspace) == before


@pytest.mark.parametrize("field", ["workspaceId", "userEmail", "scopes"])
def test_read_only_fields_are_refused(client, workspace, writer, field):
    before = snapshot(workspace)
    assert_invalid(patch(client, writer.secret, {field: "x", "timezone": "UTC"}), field)
    assert snapshot(workspace) == before


def test_sending_back_the_whole_record_is_refused(client, workspace, writer):
    record = client.get(URL, **auth(writer.secret)).json()
    assert_invalid(patch(client, writer.secret, record), "read-only")


def test_unknown_field_is_refused(client, workspace, writer):
    assert_invalid(patch(client, writer.secret, {"name": "Acme 2"}), "name")


@pytest.mark.parametrize("body", ["{}", "[]", '"text"', "42", "null", "", "{", '{"a": NaN}'])
def test_body_must_be_a_non_empty_json_object(client, writer, body):
    assert patch(client, writer.secret, body).status_code == 400


def test_duplicate_keys_are_refused(client, writer):
    assert (
        patch(client, writer.secret, '{"timezone": "UTC", "timezone": "Asia/Tokyo"}').status_code
        == 400
    )


@pytest.mark.parametrize(
    "field, value",
    [
        ("workspaceName", None),
        ("workspaceName", 42),
        ("workspaceName", ""),
        ("workspaceName", "   "),
        ("workspaceName", "x" * 101),
        ("workspaceName", "bad\x00name"),
        ("workspaceName", "two\nlines"),
        ("timezone", None),
        ("timezone", "Mars/Olympus"),
        ("timezone", "europe/berlin"),
        ("timezone", "Factory"),
        ("timezone", "localtime"),
        ("timezone", ""),
        ("timezone", 1),
        ("autoTranscribeUploads", None),
        ("autoTranscribeUploads", "true"),
        ("autoTranscribeUploads", 1),
        ("autoTranscribeUploads", 0),
        ("transcriptionLanguage", None),
        ("transcriptionLanguage", "EN"),
        ("transcriptionLanguage", "eng"),
        ("transcriptionLanguage", "xx"),
        ("transcriptionLanguage", ["en"]),
    ],
)
def test_invalid_values_are_refused_naming_the_field(client, workspace, writer, field, value):
    before = snapshot(workspace)
    assert_invalid(patch(client, writer.secret, {field: value}), field)
    assert snapshot(workspace) == before


def test_name_of_100_code_points_is_accepted(client, writer):
    name = "🦊" * 100
    assert patch(client, writer.secret, {"workspaceName": name}).json()["workspaceName"] == name


def test_all_or_nothing_when_a_later_field_is_bad(client, workspace, writer):
    before = snapshot(workspace)
    response = patch(
        client,
        writer.secret,
        {"workspaceName": "Renamed", "autoTranscribeUploads": True, "transcriptionLanguage": "zz"},
    )
    assert_invalid(response, "transcriptionLanguage")
    assert snapshot(workspace) == before


@pytest.mark.parametrize(
    "code",
    [
        "en",
        "de",
        "fr",
        "es",
        "it",
        "pt",
        "nl",
        "pl",
        "sv",
        "da",
        "fi",
        "ja",
        "ko",
        "zh",
        "ar",
        "hi",
        "ru",
        "tr",
        "uk",
    ],
)
def test_required_languages_are_supported(client, writer, code):
    assert patch(client, writer.secret, {"transcriptionLanguage": code}).status_code == 200


def test_default_video_quality_is_untouched_by_the_api(client, workspace, writer):
    response = patch(client, writer.secret, {"workspaceName": "Renamed"})
    assert response.status_code == 200
    assert "defaultVideoQuality" not in response.json()
    workspace.refresh_from_db()
    assert (workspace.name, workspace.default_video_quality) == ("Renamed", "720p")
    for field in ("videoSettings", "defaultVideoQuality", "default_video_quality"):
        assert_invalid(patch(client, writer.secret, {field: "1080p"}), field)
    workspace.refresh_from_db()
    assert workspace.default_video_quality == "720p"


def test_patch_of_another_workspace_is_impossible(client, workspace, writer):
    other = WorkspaceFactory(name="Other")
    before = snapshot(workspace), snapshot(other)
    aimed = patch(
        client, writer.secret, {"workspaceId": str(other.pk), "workspaceName": "Hijacked"}
    )
    assert_invalid(aimed, "workspaceId")
    assert (snapshot(workspace), snapshot(other)) == before
    # Without a workspace id, a key can only ever name its own workspace.
    assert patch(client, writer.secret, {"workspaceName": "Mine"}).status_code == 200
    workspace.refresh_from_db()
    other.refresh_from_db()
    assert (workspace.name, other.name) == ("Mine", "Other")


def test_an_admins_key_cannot_change_settings(client, workspace):
    admin = owner_of(workspace)
    admin.memberships.update(role="admin")
    secret = make_key(user=admin, workspace=workspace, scopes=["pages:write"]).secret
    before = snapshot(workspace)
    response = patch(client, secret, {"workspaceName": "Taken over"})
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient-role"
    assert snapshot(workspace) == before


def test_a_demoted_owners_key_loses_the_power_at_once(client, workspace, writer):
    assert patch(client, writer.secret, {"timezone": "Europe/Berlin"}).status_code == 200
    writer.key.user.memberships.update(role="admin")
    response = patch(client, writer.secret, {"timezone": "Europe/Paris"})
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient-role"
    assert snapshot(workspace)["timezone"] == "Europe/Berlin"


def test_an_admins_key_still_reads_the_workspace(client, workspace):
    admin = owner_of(workspace)
    admin.memberships.update(role="admin")
    secret = make_key(user=admin, workspace=workspace, scopes=["pages:write"]).secret
    assert client.get(URL, **auth(secret)).status_code == 200


@pytest.mark.parametrize("name", ["access_token", "api_key"])
def test_a_key_in_the_query_string_is_refused_before_authentication(client, writer, name):
    response = client.get(f"{URL}?{name}={writer.secret}")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid-input"
    assert name in response.json()["message"]
    writer.key.refresh_from_db()
    assert writer.key.last_used_at is None
