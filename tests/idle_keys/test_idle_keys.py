"""Idle keys (docs/product.md §13) with the clock moved: the warning 7 days before, once; the
revocation at the day; a key used in between survives; idleDays checked all-or-nothing."""

import json
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core import mail
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.common.dates import day_text, moment_text
from apps.idle_keys.sweep import idle_keys_job
from apps.service_accounts.services import service_account_create, service_account_key_create
from apps.webhooks.services import endpoint_create
from apps.workspaces.models import Workspace
from tests.conftest import auth, run_tasks
from tests.factories import make_key

pytestmark = pytest.mark.django_db
DAY = timedelta(days=1)


def days_on(start, days):
    return time_machine.travel(start + timedelta(days=days), tick=False)


@pytest.fixture
def policy(workspace):
    Workspace.objects.filter(pk=workspace.pk).update(key_idle_days=30)


def events(action):
    return list(AuditEvent.objects.filter(action=action).order_by("id"))


def test_warned_once_seven_days_ahead_then_revoked_at_the_day(client, owner, policy):
    start = timezone.now()
    made = make_key(user=owner, name="Nightly export")
    mail.outbox.clear()
    with days_on(start, 22):
        idle_keys_job()
        run_tasks()
        assert events("key.idle_warning") == []
    with days_on(start, 23.01):
        idle_keys_job()
        idle_keys_job()
        run_tasks()
        assert len(events("key.idle_warning")) == 1
        assert [m.to for m in mail.outbox] == [["owner@acme.test"]]
        assert "revoked in 7 days" in mail.outbox[0].subject
    with days_on(start, 29.9):
        idle_keys_job()
        assert ApiKey.objects.get(pk=made.key.pk).revoked_at is None
    with days_on(start, 30.05):
        idle_keys_job()
        run_tasks()
        revoked = ApiKey.objects.get(pk=made.key.pk)
        assert revoked.revoked_at is not None
        assert client.get("/api/v1/workspace", **auth(made.secret)).status_code == 401
        [event] = events("key.revoked")
        assert event.data == {"reason": "idle"}
        assert "was revoked" in mail.outbox[-1].subject


def test_a_key_used_in_between_survives(client, owner, policy):
    start = timezone.now()
    made = make_key(user=owner)
    with days_on(start, 24):
        idle_keys_job()
        assert len(events("key.idle_warning")) == 1
        assert client.get("/api/v1/workspace", **auth(made.secret)).status_code == 200
        from apps.metering.buffer import usage_flush

        usage_flush()
    with days_on(start, 31):
        idle_keys_job()
        assert ApiKey.objects.get(pk=made.key.pk).revoked_at is None
    with days_on(start, 24 + 23.5):  # idle again: warned again, for the new spell
        idle_keys_job()
        assert len(events("key.idle_warning")) == 2


def test_a_key_idle_when_the_policy_comes_in_is_warned_before_it_goes(owner, workspace):
    start = timezone.now()
    made = make_key(user=owner)
    with days_on(start, 100):
        Workspace.objects.filter(pk=workspace.pk).update(key_idle_days=30)
        idle_keys_job()
        assert ApiKey.objects.get(pk=made.key.pk).revoked_at is None
        assert len(events("key.idle_warning")) == 1
    with days_on(start, 107.01):
        idle_keys_job()
        assert ApiKey.objects.get(pk=made.key.pk).revoked_at is not None


def test_a_warning_never_names_a_revocation_date_already_past(owner, workspace):
    start = timezone.now()
    made = make_key(user=owner)
    with days_on(start, 100):
        Workspace.objects.filter(pk=workspace.pk).update(key_idle_days=30)
        idle_keys_job()
        run_tasks()
        [warning] = events("key.idle_warning")
        named = datetime.fromisoformat(warning.data["revokedAt"])
        assert named >= timezone.now() + timedelta(days=7) - timedelta(seconds=1)
        [notice] = [m for m in mail.outbox if "will be revoked" in m.subject]
        assert f"on {moment_text(named, UTC)} unless" in notice.body  # one date system (§4)
        assert f"since {day_text(made.key.created_at)}." in notice.body


def test_a_key_that_answered_just_before_the_sweep_is_not_taken(client, owner, policy, settings):
    # The stamp of a request is not flushed for an hour here: only the request's own write of
    # an overdue stamp (or the request log) can tell the sweep, in its other process.
    settings.USAGE_FLUSH_SECONDS = 3600
    start = timezone.now()
    made = make_key(user=owner)
    with days_on(start, 24):
        idle_keys_job()
        assert len(events("key.idle_warning")) == 1
    with days_on(start, 31):
        assert client.get("/api/v1/workspace", **auth(made.secret)).status_code == 200
        idle_keys_job()
        assert ApiKey.objects.get(pk=made.key.pk).revoked_at is None
        assert events("key.revoked") == []


def test_a_service_account_s_key_warns_the_owners_and_sends_webhooks(owner, workspace, policy):
    endpoint_create(
        workspace,
        url="https://hooks.example.com/in",
        event_types=["key.idle_warning"],
        actor=Actor.of_user(owner),
    )
    account = service_account_create(workspace=workspace, name="CI", actor=Actor.of_user(owner))
    service_account_key_create(
        account=account,
        name="Deploys",
        scopes=["pages:read"],
        expires_at=None,
        actor=Actor.of_user(owner),
    )
    mail.outbox.clear()
    with days_on(timezone.now(), 23.5):
        idle_keys_job()
        run_tasks()
    assert [m.to for m in mail.outbox] == [["owner@acme.test"]]
    from apps.webhooks.models import WebhookDelivery

    assert WebhookDelivery.objects.filter(event_type="key.idle_warning").count() == 1


@pytest.mark.parametrize("bad", [29, 366, "90", True, 45.5, 29.0])
def test_idle_days_is_checked_all_or_nothing(client, owner, workspace, bad):
    owners = make_key(user=owner, scopes=["keys:read", "keys:write"])
    answer = client.patch(
        "/api/v1/workspace/policy",
        json.dumps({"approval": "all", "idleDays": bad}),
        content_type="application/json",
        **auth(owners.secret),
    )
    assert answer.status_code == 400 and "idleDays" in answer.json()["message"]
    workspace.refresh_from_db()
    assert (workspace.key_approval, workspace.key_idle_days) == ("off", None)


def test_idle_days_set_and_cleared_over_the_api_and_the_settings_page(client, owner, workspace):
    owners = make_key(user=owner, scopes=["keys:read", "keys:write"])
    for value in (90, 30.0, None):  # JSON Schema's integer: 30.0 is 30, stored and shown so
        answer = client.patch(
            "/api/v1/workspace/policy",
            json.dumps({"idleDays": value}),
            content_type="application/json",
            **auth(owners.secret),
        )
        assert answer.status_code == 200 and answer.json()["idleDays"] == value
        assert Workspace.objects.get(pk=workspace.pk).key_idle_days == value
        assert value is None or isinstance(answer.json()["idleDays"], int)
    page = client.get("/settings/")
    assert "Revoke keys unused for" in page.content.decode()


def test_a_warned_key_says_so_in_the_list_and_on_its_page_until_used(client, owner, policy):
    """PRODUCT §13: from the warning on, "Idle N days, revoked on <day> unless used" in the
    list and on the key's page, and the list filters by it; used, the notice goes."""
    start = timezone.now()
    warned = make_key(user=owner, name="Nightly export")
    fresh = make_key(user=owner, name="Fresh key")
    with days_on(start, 23.5):
        client.force_login(owner)  # a session of that day
        ApiKey.objects.filter(pk=fresh.key.pk).update(last_used_at=timezone.now())
        listed = client.get("/integrations/api/").content.decode()
        assert "revoked on" not in listed  # not warned yet: the job has not run
        idle_keys_job()
        # The day the warning named (its e-mail and audit event): never sooner than 7 days on.
        [warning] = events("key.idle_warning")
        on = day_text(datetime.fromisoformat(warning.data["revokedAt"]))
        listed = client.get("/integrations/api/").content.decode()
        assert f"Idle 23 days, revoked on {on} unless used" in listed
        page = client.get(f"/integrations/api/keys/{warned.key.pk}/").content.decode()
        assert 'data-testid="idle-notice"' in page and f"revoked on {on} unless used" in page
        filtered = client.get("/integrations/api/?idle_warned=1").content.decode()
        assert "Nightly export" in filtered and "Fresh key" not in filtered
        assert "Revoked soon as idle" in filtered
    with days_on(start, 25):
        client.force_login(owner)
        assert client.get("/api/v1/workspace", **auth(warned.secret)).status_code == 200
        from apps.metering.buffer import usage_flush

        usage_flush()
        page = client.get(f"/integrations/api/keys/{warned.key.pk}/").content.decode()
        assert 'data-testid="idle-notice"' not in page
        filtered = client.get("/integrations/api/?idle_warned=1").content.decode()
        assert "Nightly export" not in filtered
    with days_on(start, 25 + 23.5):  # warned again, then the policy is turned off: no notice
        idle_keys_job()
        client.force_login(owner)
        page = client.get(f"/integrations/api/keys/{warned.key.pk}/").content.decode()
        assert 'data-testid="idle-notice"' in page
        Workspace.objects.filter(pk=warned.key.workspace_id).update(key_idle_days=None)
        page = client.get(f"/integrations/api/keys/{warned.key.pk}/").content.decode()
        assert 'data-testid="idle-notice"' not in page
