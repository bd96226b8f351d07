"""Approval of new keys (docs/product.md §10), through the API, the dashboard and the schedule:
a key the policy covers waits (401 pending-key) until an owner other than its holder approves
it; denied, it never works; unanswered for 7 days, the schedule denies it."""

import json
import re
from datetime import timedelta

import pytest
import time_machine
from django.core import mail
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.approvals.services import api_keys_deny_unanswered, api_keys_remind_owners
from apps.audit.models import AuditEvent
from apps.workspaces.models import Membership
from tests.client import Client
from tests.conftest import auth, run_tasks
from tests.factories import UserFactory, make_community, make_key, member_of, owner_of

pytestmark = pytest.mark.django_db

WRITE = ["pages:read", "pages:write"]
PORTAL_NEW = "/portal/settings/developer/new/"


def post(client, path, body, secret):
    return client.post(
        f"/api/v1{path}", json.dumps(body), content_type="application/json", **auth(secret)
    )


def patch(client, path, body, secret):
    return client.patch(
        f"/api/v1{path}", json.dumps(body), content_type="application/json", **auth(secret)
    )


@pytest.fixture
def owner_key(owner, workspace):
    return make_key(user=owner, workspace=workspace, scopes=["keys:read", "keys:write", *WRITE])


@pytest.fixture
def admin_key(admin, workspace):
    """The admin's own key able to mint keys, made while no approval was asked."""
    return make_key(
        user=admin, workspace=workspace, scopes=["keys:read", "keys:write", *WRITE], name="Admin"
    )


def set_approval(client, owner_key, value):
    response = patch(client, "/workspace/policy", {"approval": value}, owner_key.secret)
    assert response.status_code == 200, response.content
    return response.json()


def test_owners_read_and_change_the_policy_over_the_api_audited(client, owner_key, admin_key):
    got = client.get("/api/v1/workspace/policy", **auth(owner_key.secret))
    assert got.json() == {
        "maxLifetimeDays": 365,
        "allowNoExpiry": True,
        "requireTwoFactor": False,
        "approval": "off",
        "idleDays": None,
        "memberQuota": None,
    }
    changed = patch(
        client,
        "/workspace/policy",
        {"approval": "write", "maxLifetimeDays": 90},
        owner_key.secret,
    )
    assert changed.status_code == 200
    assert changed.json()["approval"] == "write"
    assert changed.json()["maxLifetimeDays"] == 90
    # JSON's 90.0 is the integer 90, as JSON Schema reads it.
    same = patch(client, "/workspace/policy", {"maxLifetimeDays": 90.0}, owner_key.secret)
    assert same.status_code == 200 and same.json()["maxLifetimeDays"] == 90
    events = AuditEvent.objects.filter(action="settings.changed").order_by("pk")
    assert [(e.data["field"], e.data["before"], e.data["after"]) for e in events] == [
        ("key_approval", "off", "write"),
        ("key_max_lifetime_days", 365, 90),
    ]
    # Admins read and change nothing of it; a bad value changes nothing at all.
    for answer in (
        client.get("/api/v1/workspace/policy", **auth(admin_key.secret)),
        patch(client, "/workspace/policy", {"approval": "off"}, admin_key.secret),
    ):
        assert answer.status_code == 403
        assert answer.json()["error"] == "insufficient-role"
    refused = patch(
        client, "/workspace/policy", {"approval": "off", "maxLifetimeDays": 0}, owner_key.secret
    )
    assert refused.status_code == 400
    assert "maxLifetimeDays" in refused.json()["message"]
    assert (
        client.get("/api/v1/workspace/policy", **auth(owner_key.secret)).json()["approval"]
        == "write"
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "at least one of maxLifetimeDays"),
        ({"approval": "some"}, "approval"),
        ({"allowNoExpiry": "yes"}, "allowNoExpiry"),
        ({"maxLifetimeDays": True}, "maxLifetimeDays"),
        ({"maxLifetimeDays": 366}, "maxLifetimeDays"),
        ({"maxLifetimeDays": 90.5}, "maxLifetimeDays"),
        ({"workspaceName": "x"}, "workspaceName"),
    ],
)
def test_a_bad_policy_patch_is_refused_naming_the_field(client, owner_key, body, field):
    refused = patch(client, "/workspace/policy", body, owner_key.secret)
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid-input"
    assert field in refused.json()["message"]


def test_a_policy_patch_needs_keys_write(client, owner, workspace):
    reader = make_key(user=owner, workspace=workspace, scopes=["keys:read"])
    refused = patch(client, "/workspace/policy", {"approval": "all"}, reader.secret)
    assert refused.status_code == 403
    assert refused.json()["error"] == "insufficient-scope"


def test_an_admins_write_key_waits_until_an_owner_approves_it(
    client, owner_key, admin_key, workspace, django_capture_on_commit_callbacks
):
    second_owner = owner_of(workspace, email="second@acme.test")
    set_approval(client, owner_key, "write")
    mail.outbox.clear()
    created = post(
        client,
        "/keys",
        {"name": "Deploy bot", "description": "Publishes pages on deploy", "scopes": WRITE},
        admin_key.secret,
    )
    assert created.status_code == 201
    record = created.json()
    assert record["state"] == "pending"
    assert record["approval"]["decision"] is None
    secret = record["secret"]
    waiting = client.get("/api/v1/pages", **auth(secret))
    assert waiting.status_code == 401
    assert waiting.json()["error"] == "pending-key"
    assert 'error="invalid_token"' in waiting["WWW-Authenticate"]
    # Each owner is e-mailed once, with who asked and why.
    run_tasks()
    asked = [m for m in mail.outbox if "asks you to approve" in m.subject]
    assert sorted(m.to for m in asked) == [["owner@acme.test"], [second_owner.email]]
    assert "Publishes pages on deploy" in asked[0].body
    assert "/integrations/api/waiting/" in asked[0].body
    # Listed as pending everywhere the keys are.
    pending = client.get("/api/v1/keys?state=pending", **auth(owner_key.secret)).json()["data"]
    assert [k["name"] for k in pending] == ["Deploy bot"]
    mail.outbox.clear()
    approved = post(client, f"/keys/{record['id']}/approve", {}, owner_key.secret)
    assert approved.status_code == 200, approved.content
    assert approved.json()["state"] == "active"
    assert approved.json()["approval"]["decidedBy"] == "owner@acme.test"
    # The same secret works on the very next request.
    assert client.get("/api/v1/pages", **auth(secret)).status_code == 200
    run_tasks()
    assert [m.to for m in mail.outbox] == [["admin@acme.test"]]
    assert "was approved" in mail.outbox[0].subject
    actions = list(AuditEvent.objects.filter(key_id=record["id"]).values_list("action", flat=True))
    assert {"key.created", "key.approval_requested", "key.approved"} <= set(actions)
    # Approving again is a conflict.
    again = post(client, f"/keys/{record['id']}/approve", {}, owner_key.secret)
    assert again.status_code == 409
    assert again.json()["error"] == "conflict"


def test_a_read_only_key_works_at_once_under_write(client, owner_key, admin_key):
    set_approval(client, owner_key, "write")
    created = post(client, "/keys", {"name": "Reader", "scopes": ["pages:read"]}, admin_key.secret)
    assert created.json()["state"] == "active"
    assert created.json()["approval"] is None
    assert client.get("/api/v1/pages", **auth(created.json()["secret"])).status_code == 200


def test_keys_scopes_wait_under_write_even_read_only(client, owner_key, admin_key):
    set_approval(client, owner_key, "write")
    created = post(client, "/keys", {"name": "Auditor", "scopes": ["keys:read"]}, admin_key.secret)
    assert created.json()["state"] == "pending"


def test_owners_own_keys_never_wait(client, owner_key):
    set_approval(client, owner_key, "all")
    created = post(client, "/keys", {"name": "Mine", "scopes": WRITE}, owner_key.secret)
    assert created.json()["state"] == "active"


def test_a_denied_key_stays_dead_and_its_holder_is_told_why(client, owner_key, admin_key):
    set_approval(client, owner_key, "all")
    created = post(client, "/keys", {"name": "Bot", "scopes": ["pages:read"]}, admin_key.secret)
    key_id, secret = created.json()["id"], created.json()["secret"]
    mail.outbox.clear()
    denied = post(
        client, f"/keys/{key_id}/deny", {"reason": "Use the shared key instead"}, owner_key.secret
    )
    assert denied.status_code == 200
    assert denied.json()["state"] == "denied"
    assert denied.json()["approval"]["reason"] == "Use the shared key instead"
    refused = client.get("/api/v1/pages", **auth(secret))
    assert refused.status_code == 401
    assert refused.json()["error"] == "denied-key"
    assert post(client, f"/keys/{key_id}/approve", {}, owner_key.secret).status_code == 409
    # Revoking it changes nothing: denied is final.
    client.delete(f"/api/v1/keys/{key_id}", **auth(owner_key.secret))
    assert ApiKey.objects.get(pk=key_id).state == "denied"
    run_tasks()
    told = [m for m in mail.outbox if m.to == ["admin@acme.test"]]
    assert "was denied" in told[0].subject
    assert "Use the shared key instead" in told[0].body


def test_nobody_decides_on_a_key_of_their_own(client, owner_key, admin_key, admin, workspace):
    set_approval(client, owner_key, "write")
    created = post(client, "/keys", {"name": "Mine", "scopes": WRITE}, admin_key.secret)
    key_id = created.json()["id"]
    # An admin may not decide at all.
    refused = post(client, f"/keys/{key_id}/approve", {}, admin_key.secret)
    assert refused.status_code == 403
    assert refused.json()["error"] == "insufficient-role"
    # Promoted to owner, the holder still may not decide on their own waiting key.
    Membership.objects.filter(user=admin, workspace=workspace).update(role="owner")
    for action in ("approve", "deny"):
        refused = post(client, f"/keys/{key_id}/{action}", {}, admin_key.secret)
        assert refused.status_code == 403
        assert "of their own" in refused.json()["message"]
    assert ApiKey.objects.get(pk=key_id).state == "pending"


def test_a_key_of_another_workspace_is_404_and_a_reason_has_a_limit(
    client, owner_key, admin_key, stranger
):
    elsewhere = make_key(user=stranger)
    missing = post(client, f"/keys/{elsewhere.key.pk}/approve", {}, owner_key.secret)
    assert missing.status_code == 404
    set_approval(client, owner_key, "write")
    key_id = post(client, "/keys", {"name": "Bot", "scopes": WRITE}, admin_key.secret).json()["id"]
    too_long = post(client, f"/keys/{key_id}/deny", {"reason": "x" * 501}, owner_key.secret)
    assert too_long.status_code == 400
    assert "reason" in too_long.json()["message"]
    assert ApiKey.objects.get(pk=key_id).state == "pending"
    # The reason is optional.
    assert post(client, f"/keys/{key_id}/deny", {}, owner_key.secret).json()["state"] == "denied"


def test_the_schedule_denies_a_key_nobody_answered_in_seven_days(client, owner_key, admin_key):
    set_approval(client, owner_key, "write")
    created = post(client, "/keys", {"name": "Forgotten", "scopes": WRITE}, admin_key.secret)
    secret = created.json()["secret"]
    key = ApiKey.objects.get(pk=created.json()["id"])
    with time_machine.travel(timezone.now() + timedelta(days=6, hours=23)):
        assert api_keys_deny_unanswered() == 0
        assert api_keys_remind_owners() == 1
    mail.outbox.clear()
    with time_machine.travel(timezone.now() + timedelta(days=7, minutes=1)):
        assert api_keys_deny_unanswered() == 1
        assert api_keys_deny_unanswered() == 0  # once
        key.refresh_from_db()
        assert key.state == "denied"
        assert key.denied_by is None
        refused = client.get("/api/v1/pages", **auth(secret))
        assert refused.json()["error"] == "denied-key"
        run_tasks()
    assert any("No owner answered within 7 days" in m.body for m in mail.outbox)
    event = AuditEvent.objects.get(key=key, action="key.denied")
    assert event.actor_label == "operator (schedule)"


def test_the_daily_reminder_lists_waiting_keys_to_each_owner(client, owner_key, admin_key):
    set_approval(client, owner_key, "write")
    post(client, "/keys", {"name": "One", "scopes": WRITE}, admin_key.secret)
    post(client, "/keys", {"name": "Two", "scopes": WRITE}, admin_key.secret)
    run_tasks()
    mail.outbox.clear()
    assert api_keys_remind_owners() == 1
    run_tasks()
    assert [m.to for m in mail.outbox] == [["owner@acme.test"]]
    assert "2 API keys wait for your approval" in mail.outbox[0].subject
    assert "“One”" in mail.outbox[0].body and "“Two”" in mail.outbox[0].body


def test_a_reminder_of_one_key_speaks_of_one_key(client, owner_key, admin_key):
    set_approval(client, owner_key, "write")
    post(client, "/keys", {"name": "One", "scopes": WRITE}, admin_key.secret)
    run_tasks()
    mail.outbox.clear()
    assert api_keys_remind_owners() == 1
    run_tasks()
    (reminder,) = mail.outbox
    assert reminder.subject == "1 API key waits for your approval in Acme"
    assert "This key does not work until an owner approves it;" in reminder.body
    assert "Approve or deny it:" in reminder.body and "them" not in reminder.body


def test_a_roll_keeps_the_approval_and_narrowing_needs_none(client, owner_key, admin_key):
    set_approval(client, owner_key, "write")
    created = post(client, "/keys", {"name": "Bot", "scopes": WRITE}, admin_key.secret).json()
    post(client, f"/keys/{created['id']}/approve", {}, owner_key.secret)
    rolled = post(client, f"/keys/{created['id']}/roll", {}, admin_key.secret)
    assert rolled.status_code == 200
    assert client.get("/api/v1/pages", **auth(rolled.json()["secret"])).status_code == 200
    narrowed = post(
        client, f"/keys/{created['id']}/narrow", {"scopes": ["pages:read"]}, admin_key.secret
    )
    assert narrowed.json()["state"] == "active"


def test_the_dashboard_create_form_says_the_key_waits(client, owner_key, admin, workspace):
    set_approval(client, owner_key, "write")
    browser = Client()
    browser.force_login(admin)
    form = browser.get("/integrations/api/new/").content.decode()
    assert 'data-testid="approval-policy"' in form
    token = re.search(r'name="form_token" value="([^"]+)"', form).group(1)
    created = browser.post(
        "/integrations/api/new/",
        {
            "form_token": token,
            "name": "From the dashboard",
            "expiry": "30",
            "scopes": WRITE,
        },
    )
    page = created.content.decode()
    assert 'data-testid="waits-for-approval"' in page, page[:3000]
    key = ApiKey.objects.get(name="From the dashboard")
    assert key.state == "pending"
    secret = re.search(r'data-testid="new-secret">([^<]+)<', page).group(1)
    assert client.get("/api/v1/pages", **auth(secret)).json()["error"] == "pending-key"


def test_a_members_key_waits_under_all_in_the_portal(client, owner_key, workspace):
    set_approval(client, owner_key, "all")
    community = make_community(workspace)
    member = member_of(community, email="member@acme.test")
    portal = Client()
    portal.force_login(member)
    form = portal.get(PORTAL_NEW).content.decode()
    token = re.search(r'name="form_token" value="([^"]+)"', form).group(1)
    created = portal.post(
        PORTAL_NEW,
        {"form_token": token, "name": "My bot", "expiry": "30", "scopes": ["communities:read"]},
    )
    assert 'data-testid="waits-for-approval"' in created.content.decode()
    key = ApiKey.objects.get(name="My bot")
    assert (key.kind, key.state) == ("member", "pending")
    listed = portal.get(PORTAL_NEW.removesuffix("new/")).content.decode()
    assert "My bot" in listed and "badge--pending" in listed


def test_owners_approve_and_deny_in_the_dashboard_one_or_many(client, owner, owner_key, admin_key):
    set_approval(client, owner_key, "write")
    ids = [
        post(client, "/keys", {"name": name, "scopes": WRITE}, admin_key.secret).json()["id"]
        for name in ("A", "B", "C")
    ]
    listing = client.get("/integrations/api/waiting/").content.decode()
    assert listing.count('data-testid="waiting-key"') == 3
    nav = client.get("/integrations/api/").content.decode()
    assert "3 waiting for your approval" in nav
    done = client.post(
        "/integrations/api/decide/", {"keys": ids[:2], "decision": "deny", "reason": "No"}
    )
    assert done.status_code == 302
    assert [ApiKey.objects.get(pk=i).state for i in ids] == ["denied", "denied", "pending"]
    client.post("/integrations/api/decide/", {"keys": [ids[2]], "decision": "approve"})
    assert ApiKey.objects.get(pk=ids[2]).state == "active"
    assert "nav-count" not in client.get("/integrations/api/").content.decode()


def test_an_admin_cannot_open_the_waiting_list(admin, workspace):
    browser = Client()
    browser.force_login(admin)
    assert browser.get("/integrations/api/waiting/").status_code == 403
    assert (
        browser.post("/integrations/api/decide/", {"keys": [1], "decision": "approve"}).status_code
        == 403
    )


def test_deciding_needs_a_recent_password(client, owner, owner_key, admin_key):
    set_approval(client, owner_key, "write")
    key_id = post(client, "/keys", {"name": "Bot", "scopes": WRITE}, admin_key.secret).json()["id"]
    with time_machine.travel(timezone.now() + timedelta(minutes=11)):
        asked = client.post("/integrations/api/decide/", {"keys": [key_id], "decision": "approve"})
        assert asked.status_code == 302
        assert "/reauthenticate/" in asked["Location"]
        assert ApiKey.objects.get(pk=key_id).state == "pending"


def test_a_cli_or_mcp_key_is_never_made_waiting(owner_key, admin, workspace, client):
    from apps.api_keys.services import api_key_create
    from apps.common.validation import InvalidInput

    set_approval(client, owner_key, "write")
    for tag in ("cli", "mcp"):
        with pytest.raises(InvalidInput, match="read access only"):
            api_key_create(
                workspace=workspace, user=admin, name="x", scopes=WRITE, expires_at=None, tag=tag
            )
    assert not ApiKey.objects.filter(user=admin, tag__in=["cli", "mcp"]).exists()


def test_createapikey_says_the_key_waits(owner_key, admin, workspace, client):
    from io import StringIO

    from django.core.management import call_command

    set_approval(client, owner_key, "write")
    out, err = StringIO(), StringIO()
    call_command(
        "createapikey",
        "--workspace",
        str(workspace.pk),
        "--user",
        admin.email,
        "--name",
        "Ops",
        "--scopes",
        "pages:write",
        stdout=out,
        stderr=err,
    )
    secret = out.getvalue().strip().splitlines()[-1]
    assert "waits for an owner's approval" in err.getvalue()
    assert client.get("/api/v1/pages", **auth(secret)).json()["error"] == "pending-key"


def test_unknown_user_model_noise_is_not_a_holder(db):
    """A user with no place in the workspace is refused before any approval is asked."""
    from apps.api_keys.services import api_key_create
    from apps.common.validation import InvalidInput
    from tests.factories import WorkspaceFactory

    workspace = WorkspaceFactory(key_approval="all")
    with pytest.raises(InvalidInput):
        api_key_create(
            workspace=workspace, user=UserFactory(), name="x", scopes=WRITE, expires_at=None
        )
    assert not AuditEvent.objects.filter(action="key.approval_requested").exists()


def test_a_denied_key_is_past_leak_reports_and_expiry_events(client, owner_key, admin_key):
    """A denied key never worked: a leak of it revokes nothing and tells nobody, and its
    expiry is no event."""
    from apps.key_expiry.notices import api_key_announce_expired
    from apps.leaks.reports import leaked_key_revoke

    set_approval(client, owner_key, "write")
    created = post(
        client,
        "/keys",
        {"name": "Bot", "scopes": WRITE, "expiresInDays": 7},
        admin_key.secret,
    ).json()
    post(client, f"/keys/{created['id']}/deny", {}, owner_key.secret)
    key = ApiKey.objects.get(pk=created["id"])
    run_tasks()
    mail.outbox.clear()
    leaked_key_revoke(key, "https://github.com/acme/leak", "content")
    assert not AuditEvent.objects.filter(key=key, action="key.leaked").exists()
    assert ApiKey.objects.get(pk=key.pk).state == "denied"
    run_tasks()
    assert mail.outbox == []
    assert api_key_announce_expired(now=timezone.now() + timedelta(days=8)) == 0


def test_a_leak_of_a_waiting_key_revokes_it(client, owner_key, admin_key):
    from apps.leaks.reports import leaked_key_revoke

    set_approval(client, owner_key, "write")
    created = post(client, "/keys", {"name": "Bot", "scopes": WRITE}, admin_key.secret).json()
    key = ApiKey.objects.get(pk=created["id"])
    leaked_key_revoke(key, "https://github.com/acme/leak", "content")
    assert ApiKey.objects.get(pk=key.pk).state == "revoked"
    assert post(client, f"/keys/{key.pk}/approve", {}, owner_key.secret).status_code == 409
