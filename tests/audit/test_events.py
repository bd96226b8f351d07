"""Each change writes its event, with the right actor, in the same transaction."""

import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.api_keys.audit_actions import (
    KEY_CREATED,
    KEY_FIRST_USED,
    KEY_REVOKED,
    MEMBER_KEY_CREATED,
    MEMBER_KEY_REVOKED,
)
from apps.api_keys.models import ApiKey
from apps.api_keys.services import api_key_revoke
from apps.audit.models import AuditEvent
from apps.audit.services import Actor, audit_record
from apps.workspaces.audit_actions import SETTINGS_CHANGED
from apps.workspaces.models import Workspace
from apps.workspaces.services import workspace_update
from tests.conftest import auth
from tests.factories import WorkspaceFactory, make_community, make_key, member_of, owner_of

pytestmark = pytest.mark.django_db


def only_event(**filters) -> AuditEvent:
    return AuditEvent.objects.get(**filters)


def test_key_created_in_the_dashboard_names_the_user_and_never_the_secret(client):
    owner = owner_of(WorkspaceFactory())
    client.force_login(owner)
    import re

    page = client.get("/integrations/api/new/").content.decode()
    token = re.search(r'name="form_token" value="([^"]+)"', page).group(1)
    response = client.post(
        "/integrations/api/new/",
        {"name": "Zapier", "expiry": "30", "scopes": ["pages:read"], "form_token": token},
        REMOTE_ADDR="198.51.100.4",
    )
    secret = re.search(r'data-testid="new-secret">([^<]+)<', response.content.decode()).group(1)
    event = only_event(action=KEY_CREATED)
    assert event.actor_user == owner and event.actor_key is None
    assert event.actor_label == owner.email
    assert event.ip == "198.51.100.4"
    assert event.key == ApiKey.objects.get()
    assert event.data["scopes"] == ["pages:read"]
    dumped = json.dumps(list(AuditEvent.objects.values()), default=str)
    assert secret not in dumped


def test_revocation_names_who_revoked(client):
    workspace = WorkspaceFactory()
    created = make_key(user=owner_of(workspace), workspace=workspace)
    admin = owner_of(workspace)
    client.force_login(admin)
    client.post(f"/integrations/api/keys/{created.key.pk}/revoke/")
    event = only_event(action=KEY_REVOKED)
    assert event.actor_user == admin
    assert event.key == created.key
    client.post(f"/integrations/api/keys/{created.key.pk}/revoke/")
    assert AuditEvent.objects.filter(action=KEY_REVOKED).count() == 1


def test_operator_commands_are_the_actor(client):
    created = make_key()
    call_command("revokeapikey", created.secret)
    event = only_event(action=KEY_REVOKED)
    assert event.actor_user is None and event.actor_key is None
    assert event.actor_label == "operator (revokeapikey)"


def test_first_use_is_recorded_once_with_the_key_as_actor(client):
    created = make_key()
    for _ in range(3):
        client.get("/api/v1/workspace", **auth(created.secret), REMOTE_ADDR="203.0.113.7")
    event = only_event(action=KEY_FIRST_USED)
    assert event.actor_key == created.key
    assert event.ip == "203.0.113.7"
    # Later uses, even after the once-a-minute window, are not first uses.
    ApiKey.objects.filter(pk=created.key.pk).update(
        last_used_at=timezone.now() - timedelta(minutes=5)
    )
    client.get("/api/v1/workspace", **auth(created.secret))
    assert AuditEvent.objects.filter(action=KEY_FIRST_USED).count() == 1


def test_patch_through_the_api_records_each_field_with_before_and_after(client):
    workspace = WorkspaceFactory(timezone="UTC", transcription_language="en")
    created = make_key(user=owner_of(workspace), workspace=workspace, scopes=["pages:write"])
    client.patch(
        "/api/v1/workspace",
        json.dumps({"timezone": "Asia/Tokyo", "transcriptionLanguage": "en"}),
        content_type="application/json",
        **auth(created.secret),
    )
    event = only_event(action=SETTINGS_CHANGED)  # the language did not change
    assert event.actor_key == created.key
    assert event.data == {"field": "timezone", "before": "UTC", "after": "Asia/Tokyo"}
    assert created.key.name in event.actor_label


def test_settings_page_records_the_user(client):
    workspace = WorkspaceFactory(name="Acme")
    owner = owner_of(workspace)
    client.force_login(owner)
    client.post(
        "/settings/",
        {
            "name": "Acme 2",
            "timezone": "UTC",
            "transcription_language": "en",
            "default_video_quality": "720p",
            "key_max_lifetime_days": "365",
            "key_allow_no_expiry": "on",
            "key_approval": "off",
        },
    )
    event = only_event(action=SETTINGS_CHANGED)
    assert event.actor_user == owner
    assert event.data == {"field": "name", "before": "Acme", "after": "Acme 2"}


def test_member_keys_have_their_own_actions():
    community = make_community()
    member = member_of(community)
    created = make_key(
        user=member,
        workspace=community.workspace,
        scopes=["communities:read"],
        kind=ApiKey.Kind.MEMBER,
    )
    api_key_revoke(key=created.key, actor=Actor.of_user(member))
    assert only_event(action=MEMBER_KEY_CREATED).actor_user == member
    assert only_event(action=MEMBER_KEY_REVOKED).actor_user == member


def test_no_event_without_its_change_and_no_change_without_its_event(monkeypatch):
    """Fail midway through a two-field update: neither field nor any event survives."""
    workspace = WorkspaceFactory(name="Acme", timezone="UTC")
    calls = {"n": 0}
    real = audit_record

    def fail_on_second(**kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("database went away")
        return real(**kwargs)

    monkeypatch.setattr("apps.workspaces.services.audit_record", fail_on_second)
    with pytest.raises(RuntimeError):
        workspace_update(
            workspace=workspace,
            changes={"name": "Renamed", "timezone": "Asia/Tokyo"},
            actor=Actor.of_operator("test"),
        )
    fresh = Workspace.objects.get(pk=workspace.pk)
    assert (fresh.name, fresh.timezone) == ("Acme", "UTC")
    assert not AuditEvent.objects.exists()


def test_failed_revocation_leaves_the_key_active(monkeypatch):
    created = make_key()

    def broken(**kwargs):
        raise RuntimeError("log unavailable")

    monkeypatch.setattr("apps.api_keys.services.audit_record", broken)
    with pytest.raises(RuntimeError):
        api_key_revoke(key=created.key, actor=Actor.of_operator("test"))
    assert ApiKey.objects.get(pk=created.key.pk).revoked_at is None


def test_audit_record_refuses_to_run_outside_a_transaction():
    from django.db import connection

    workspace = WorkspaceFactory()

    if connection.in_atomic_block:
        # pytest-django wraps each test in a transaction; check the guard directly instead.
        from unittest import mock

        with mock.patch("apps.audit.services.transaction.get_connection") as get_connection:
            get_connection.return_value.in_atomic_block = False
            with pytest.raises(RuntimeError, match="inside the transaction"):
                audit_record(
                    workspace=workspace, action=KEY_CREATED, actor=Actor.of_operator("test")
                )


def test_every_app_declares_its_own_actions_and_the_audit_log_finds_them_all():
    from apps.audit.actions import action_choices, action_label, audit_action

    codes = dict(action_choices())
    for code in (
        "key.created",
        "cli.login",
        "settings.changed",
        "invitation.sent",
        "community.member_removed",
    ):
        assert code in codes  # declared in api_keys, devices, workspaces, invitations, communities
    assert action_label("key.leaked") == "Key found leaked"
    assert action_label("retired.action") == "retired.action"
    with pytest.raises(ValueError, match="declared twice"):
        audit_action("key.created", "Something else")
