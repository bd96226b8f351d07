"""Key policies: the longest lifetime of a new key and whether "no expiry" is offered."""

from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.audit.models import AuditEvent
from apps.devices.approval import device_authorization_approve
from apps.workspaces.models import Workspace
from tests.factories import make_key

pytestmark = pytest.mark.django_db


def set_policy(client, workspace, days: int, allow_no_expiry: bool):
    return client.post(
        "/settings/",
        {
            "name": workspace.name,
            "timezone": workspace.timezone,
            "transcription_language": workspace.transcription_language,
            "default_video_quality": workspace.default_video_quality,
            "key_max_lifetime_days": str(days),
            "key_approval": workspace.key_approval,
            **({"key_allow_no_expiry": "on"} if allow_no_expiry else {}),
        },
    )


def test_owners_set_the_policy_in_settings_audited_and_checked(client, workspace, owner):
    assert set_policy(client, workspace, 30, False).status_code == 302
    workspace.refresh_from_db()
    assert (workspace.key_max_lifetime_days, workspace.key_allow_no_expiry) == (30, False)
    fields = set(
        AuditEvent.objects.filter(action="settings.changed").values_list("data__field", flat=True)
    )
    assert {"key_max_lifetime_days", "key_allow_no_expiry"} <= fields
    refused = set_policy(client, workspace, 400, False)
    assert refused.status_code == 200 and "365" in refused.content.decode()
    assert Workspace.objects.get(pk=workspace.pk).key_max_lifetime_days == 30


def test_the_create_form_offers_only_what_the_policy_allows(client, workspace, owner):
    set_policy(client, workspace, 60, False)
    form = client.get("/integrations/api/new/").content.decode()
    assert 'value="60"' in form and 'value="30"' in form
    assert 'name="expiry" value="90"' not in form
    assert 'name="expiry" value="never"' not in form
    token = form.split('name="form_token" value="')[1].split('"')[0]
    refused = client.post(
        "/integrations/api/new/",
        {"name": "Too long", "expiry": "365", "scopes": ["pages:read"], "form_token": token},
    )
    assert refused.status_code == 200 and not ApiKey.objects.filter(name="Too long").exists()
    custom = (timezone.localdate() + timedelta(days=90)).isoformat()
    refused = client.post(
        "/integrations/api/new/",
        {
            "name": "Custom",
            "expiry": "custom",
            "custom_date": custom,
            "scopes": ["pages:read"],
            "form_token": token,
        },
    )
    assert "at most 60 days ahead" in refused.content.decode()


def test_the_service_and_the_operator_command_obey_it(workspace, owner):
    Workspace.objects.filter(pk=workspace.pk).update(
        key_max_lifetime_days=30, key_allow_no_expiry=False
    )
    with pytest.raises(CommandError, match="requires an expiry"):
        call_command(
            "createapikey",
            *("--workspace", str(workspace.pk), "--user", owner.email, "--name", "Forever"),
            *("--scopes", "pages:read", "--no-expiry"),
        )
    with pytest.raises(CommandError, match="at most 30 days"):
        call_command(
            "createapikey",
            *("--workspace", str(workspace.pk), "--user", owner.email, "--name", "Long"),
            *("--scopes", "pages:read", "--expires-in", "90"),
        )
    call_command(
        "createapikey",
        *("--workspace", str(workspace.pk), "--user", owner.email, "--name", "Default"),
        *("--scopes", "pages:read"),
    )
    key = ApiKey.objects.get(name="Default")
    assert timedelta(days=29) < key.expires_at - key.created_at <= timedelta(days=30, seconds=5)


def test_cli_approval_obeys_it(client, workspace, owner):
    Workspace.objects.filter(pk=workspace.pk).update(key_max_lifetime_days=30)
    workspace.refresh_from_db()
    started = client.post(
        "/oauth/device/code",
        {
            "client_id": "gatehouse-cli",
            "scope": "pages:read",
            "installation_id": "laptop",
            "device_name": "CLI on laptop",
        },
    )
    assert started.status_code == 200
    from apps.common.validation import InvalidInput
    from apps.devices.models import DeviceAuthorization

    with pytest.raises(InvalidInput, match="CLI keys last 90 days"):
        device_authorization_approve(
            authorization=DeviceAuthorization.objects.get(),
            user=owner,
            workspace=workspace,
            scopes=["pages:read"],
        )


def test_existing_keys_outside_the_policy_are_listed_as_such(client, workspace, owner):
    make_key(user=owner, workspace=workspace, name="Forever", expires_in=None)
    make_key(user=owner, workspace=workspace, name="Short", expires_in=timedelta(days=7))
    set_policy(client, workspace, 30, False)
    listing = client.get("/integrations/api/").content.decode()
    assert listing.count("Outside policy") == 1
    row = listing[listing.index(">Forever</a>") :]
    assert row.index("Outside policy") < row.index("</tr>")
