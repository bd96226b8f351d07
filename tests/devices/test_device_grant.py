"""The device-authorization grant (RFC 8628) behind `gatehouse login`, over HTTP."""

import re
import threading
import time
from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.utils import timezone

from apps.api_keys.audit_actions import KEY_REVOKED
from apps.api_keys.models import ApiKey, ApiKeyState
from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.devices.audit_actions import CLI_LOGIN
from apps.devices.models import DeviceAuthorization
from apps.workspaces.models import Membership
from apps.workspaces.services import team_remove
from tests.client import Client
from tests.conftest import auth
from tests.factories import MembershipFactory, WorkspaceFactory, owner_of

pytestmark = pytest.mark.django_db
GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def start(client, **fields):
    data = {
        "client_id": "gatehouse-cli",
        "scope": "products:read pages:write",
        "installation_id": "install-1",
        "device_name": "laptop",
    }
    data.update(fields)
    return client.post("/oauth/device/code", data)


def poll(client, device_code, client_id="gatehouse-cli"):
    return client.post(
        "/oauth/token",
        {"grant_type": GRANT, "device_code": device_code, "client_id": client_id},
    )


def approve(client, user_code, workspace, scopes=("products:read", "pages:write")):
    return client.post(
        "/device",
        {
            "user_code": user_code,
            "decision": "approve",
            "workspace": str(workspace.pk),
            "scopes": list(scopes),
        },
    )


@pytest.fixture
def owner():
    return owner_of(WorkspaceFactory(name="Acme"))


@pytest.fixture
def browser(owner):
    client = Client()
    client.force_login(owner)
    return client


def test_device_code_answer_has_every_field_of_the_rfc(client):
    response = start(client)
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    body = response.json()
    assert set(body) == {
        "device_code",
        "user_code",
        "verification_uri",
        "verification_uri_complete",
        "expires_in",
        "interval",
    }
    assert re.fullmatch(r"[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}", body["user_code"])
    assert body["verification_uri"] == "http://testserver/device"
    assert body["verification_uri_complete"].endswith(f"?user_code={body['user_code']}")
    assert (body["expires_in"], body["interval"]) == (900, 5)
    assert len(body["device_code"]) >= 40
    stored = DeviceAuthorization.objects.get()
    assert body["device_code"] not in str(stored.__dict__)


def test_unknown_client_is_invalid_client(client):
    response = start(client, client_id="someone-else")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client"
    assert poll(client, "x", client_id="someone-else").json()["error"] == "invalid_client"


def test_unknown_scope_is_refused(client):
    response = start(client, scope="products:read admin:everything")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_scope"


def test_polling_before_approval_is_pending_then_slow_down_raises_the_interval(client):
    code = start(client).json()["device_code"]
    now = timezone.now()
    with time_machine.travel(now, tick=False):
        first = poll(client, code)
    assert (first.status_code, first.json()["error"]) == (400, "authorization_pending")
    assert first["Cache-Control"] == "no-store"
    with time_machine.travel(now + timedelta(seconds=2), tick=False):
        assert poll(client, code).json()["error"] == "slow_down"
    # The interval is now 10 s: 6 s later is still too soon, and raises it to 15 s.
    with time_machine.travel(now + timedelta(seconds=8), tick=False):
        assert poll(client, code).json()["error"] == "slow_down"
    assert DeviceAuthorization.objects.get().interval == 15
    with time_machine.travel(now + timedelta(seconds=24), tick=False):
        assert poll(client, code).json()["error"] == "authorization_pending"


def test_unknown_device_code_is_invalid_grant(client):
    assert poll(client, "not-a-code").json()["error"] == "invalid_grant"


def test_wrong_grant_type_is_refused(client):
    code = start(client).json()["device_code"]
    response = client.post(
        "/oauth/token",
        {"grant_type": "password", "device_code": code, "client_id": "gatehouse-cli"},
    )
    assert response.status_code == 400
    assert response.json()["error"] == "unsupported_grant_type"  # RFC 6749 §5.2
    missing = client.post("/oauth/token", {"device_code": code, "client_id": "gatehouse-cli"})
    assert missing.status_code == 400 and missing.json()["error"] == "invalid_request"


def test_device_code_expires_after_15_minutes(client, browser, owner):
    body = start(client).json()
    with time_machine.travel(timezone.now() + timedelta(minutes=15, seconds=1)):
        assert poll(client, body["device_code"]).json()["error"] == "expired_token"
        browser.force_login(owner)  # a fresh sign-in: sudo mode lasts 10 minutes
        page = browser.get(f"/device?user_code={body['user_code']}")
        assert page.status_code == 400


def test_approval_mints_one_cli_key_of_90_days_named_after_the_device(client, browser, owner):
    body = start(client, device_name="ada's laptop").json()
    page = browser.get(body["verification_uri_complete"].removeprefix("http://testserver"))
    text = page.content.decode()
    assert page.status_code == 200
    assert "ada&#x27;s laptop" in text and "127.0.0.1" in text and "Acme" in text
    assert "Approve only a login you started yourself" in text
    workspace = owner.memberships.get().workspace
    assert approve(browser, body["user_code"].lower(), workspace).status_code == 200
    response = poll(client, body["device_code"])
    assert response.status_code == 200
    token = response.json()
    assert token["token_type"] == "Bearer"
    assert token["expires_in"] == 7776000
    assert token["scope"] == "pages:write products:read"
    assert response["Cache-Control"] == "no-store"
    key = ApiKey.objects.get()
    assert key.tag == ApiKey.Tag.CLI and key.name == "ada's laptop"
    assert key.expires_at - key.created_at == timedelta(days=90)
    assert client.get("/api/v1/workspace", **auth(token["access_token"])).status_code == 200
    # Single use: the same device code never gives a second key.
    assert poll(client, body["device_code"]).json()["error"] == "invalid_grant"
    assert ApiKey.objects.count() == 1
    event = AuditEvent.objects.get(action=CLI_LOGIN)
    assert event.data["device"] == "ada's laptop"
    assert event.data["requestedFrom"] == "127.0.0.1"


def test_scopes_can_be_narrowed_but_never_widened(client, browser, owner):
    workspace = owner.memberships.get().workspace
    body = start(client, scope="products:read").json()
    widened = approve(browser, body["user_code"], workspace, ("products:read", "pages:write"))
    assert widened.status_code == 400
    assert DeviceAuthorization.objects.get().status == DeviceAuthorization.Status.PENDING
    body = start(client).json()
    assert approve(browser, body["user_code"], workspace, ("pages:write",)).status_code == 200
    assert poll(client, body["device_code"]).json()["scope"] == "pages:write"


def test_the_cli_may_ask_for_the_keys_scopes_and_manage_keys_with_them(client, browser, owner):
    workspace = owner.memberships.get().workspace
    body = start(client, scope="products:read keys:read keys:write").json()
    page = browser.get(f"/device?user_code={body['user_code']}").content.decode()
    assert "API keys" in page and 'value="keys:write"' in page
    assert approve(browser, body["user_code"], workspace, ("keys:read",)).status_code == 200
    token = poll(client, body["device_code"]).json()
    assert token["scope"] == "keys:read"
    listed = client.get("/api/v1/keys", **auth(token["access_token"]))
    assert listed.status_code == 200 and len(listed.json()["data"]) == 1
    refused = client.post("/api/v1/keys", {"name": "x"}, **auth(token["access_token"]))
    assert refused.status_code == 403  # keys:write was asked for, and unticked


def test_a_login_that_names_no_scope_is_never_offered_the_keys_scopes(client, browser, owner):
    body = start(client, scope="").json()
    page = browser.get(f"/device?user_code={body['user_code']}").content.decode()
    assert 'value="products:write"' in page and "keys:" not in page


def test_denial_is_access_denied_and_issues_nothing(client, browser):
    body = start(client).json()
    response = browser.post("/device", {"user_code": body["user_code"], "decision": "deny"})
    assert "denied" in response.content.decode()
    assert poll(client, body["device_code"]).json()["error"] == "access_denied"
    assert not ApiKey.objects.exists()
    # The person's security log says who tried, from where (the denial page warns of it).
    log = browser.get("/account/security/").content.decode()
    assert "CLI login denied" in log and "laptop" in log and body["user_code"] in log


def test_a_new_login_of_the_same_installation_revokes_the_previous_cli_key(client, browser, owner):
    workspace = owner.memberships.get().workspace
    secrets, replaced = [], []
    for _ in range(2):
        body = start(client).json()
        approve(browser, body["user_code"], workspace)
        answer = poll(client, body["device_code"]).json()
        secrets.append(answer["access_token"])
        replaced.append(answer["replaced_keys"])
    other = start(client, installation_id="install-2").json()
    approve(browser, other["user_code"], workspace)
    poll(client, other["device_code"])
    first, second, third = ApiKey.objects.order_by("pk")
    assert first.state == ApiKeyState.REVOKED
    assert second.state == ApiKeyState.ACTIVE
    assert third.state == ApiKeyState.ACTIVE  # another installation keeps its own key
    assert client.get("/api/v1/workspace", **auth(secrets[0])).json()["error"] == "revoked-key"
    assert AuditEvent.objects.filter(action=KEY_REVOKED, key=first).exists()
    assert replaced == [[], [first.hint]]  # the CLI says which key the second login replaced


def test_approval_page_needs_sign_in_and_csrf(client, owner):
    body = start(client).json()
    page = client.get(f"/device?user_code={body['user_code']}")
    assert page.status_code == 302 and "/sign-in/" in page["Location"]
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(owner)
    workspace = owner.memberships.get().workspace
    assert approve(strict, body["user_code"], workspace).status_code == 403
    assert DeviceAuthorization.objects.get().status == DeviceAuthorization.Status.PENDING


def test_a_community_member_cannot_approve(client):
    owner = owner_of()
    owner.memberships.update(role=Membership.Role.MEMBER)
    member_browser = Client()
    member_browser.force_login(owner)
    body = start(client).json()
    assert member_browser.get(f"/device?user_code={body['user_code']}").status_code == 403


def test_wrong_user_codes_are_limited_per_user(client, browser, owner):
    body = start(client).json()
    for _ in range(10):
        assert browser.get("/device?user_code=BCDF-GHJK").status_code == 400
    refused = browser.get(f"/device?user_code={body['user_code']}")
    assert refused.status_code == 400
    assert "Too many wrong codes" in refused.content.decode()


@pytest.mark.parametrize("change", ["removed", "demoted", "deactivated"])
def test_a_login_approved_before_the_approver_lost_their_place_mints_no_key(client, change):
    """The approver's membership and role are checked again when the key is minted."""
    workspace = WorkspaceFactory(name="Acme")
    owner_of(workspace)
    admin = MembershipFactory(workspace=workspace, role=Membership.Role.ADMIN).user
    browser = Client()
    browser.force_login(admin)
    body = start(client).json()
    assert approve(browser, body["user_code"], workspace).status_code == 200
    if change == "removed":
        team_remove(
            membership=Membership.objects.get(user=admin, workspace=workspace),
            actor=Actor.of_operator("test"),
        )
    elif change == "demoted":
        Membership.objects.filter(user=admin).update(role=Membership.Role.MEMBER)
    else:
        admin.is_active = False
        admin.save(update_fields=["is_active"])
    with time_machine.travel(timezone.now() + timedelta(seconds=6)):
        answer = poll(client, body["device_code"])
    assert answer.status_code == 400 and answer.json()["error"] == "access_denied"
    assert not ApiKey.objects.filter(user=admin).exists()


def test_the_two_factor_policy_holds_on_the_device_page_and_at_minting(client, browser, owner):
    workspace = owner.memberships.get().workspace
    body = start(client).json()
    workspace.require_two_factor = True
    workspace.save(update_fields=["require_two_factor"])
    page = browser.get(f"/device?user_code={body['user_code']}")
    assert page.status_code == 302 and page["Location"].endswith("/account/2fa/")
    assert approve(browser, body["user_code"], workspace).status_code == 302
    assert DeviceAuthorization.objects.get().status == DeviceAuthorization.Status.PENDING


def test_the_two_factor_policy_set_after_approval_stops_the_key(client, browser, owner):
    workspace = owner.memberships.get().workspace
    body = start(client).json()
    assert approve(browser, body["user_code"], workspace).status_code == 200
    workspace.require_two_factor = True
    workspace.save(update_fields=["require_two_factor"])
    with time_machine.travel(timezone.now() + timedelta(seconds=6)):
        answer = poll(client, body["device_code"])
    assert answer.json()["error"] == "access_denied"
    assert "two-factor" in answer.json()["error_description"]
    assert not ApiKey.objects.exists()


def test_a_login_that_names_no_scope_starts_from_read_only(client, browser):
    body = start(client, scope="").json()
    page = browser.get(f"/device?user_code={body['user_code']}").content.decode()
    ticked = set(re.findall(r'name="scopes" value="([a-z:]+)" checked', page))
    offered = set(re.findall(r'name="scopes" value="([a-z:]+)"', page))
    assert ticked == {"products:read", "communities:read", "pages:read"}
    assert len(offered) == 6  # write may still be ticked by hand


def test_user_code_is_typed_without_dash_and_in_lower_case(client, browser):
    body = start(client).json()
    typed = body["user_code"].replace("-", "").lower()
    page = browser.get(f"/device?user_code={typed}")
    assert page.status_code == 200
    assert body["user_code"] in page.content.decode()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_polls_after_approval_mint_exactly_one_key():
    owner = owner_of()
    workspace = owner.memberships.get().workspace
    body = start(Client()).json()
    browser = Client()
    browser.force_login(owner)
    approve(browser, body["user_code"], workspace)
    barrier = threading.Barrier(50)
    results = []

    def one_poll():
        try:
            barrier.wait()
            results.append(poll(Client(), body["device_code"]).json())
        finally:
            connection.close()

    threads = [threading.Thread(target=one_poll) for _ in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    tokens = [r for r in results if "access_token" in r]
    assert len(results) == 50
    assert len(tokens) == 1
    assert {r["error"] for r in results if "error" in r} <= {"invalid_grant", "slow_down"}
    assert ApiKey.objects.count() == 1


def test_oauth_revoke_with_the_old_secret_of_a_rolling_key_revokes_the_key(client):
    from apps.api_keys.rolling import api_key_roll
    from tests.factories import make_key

    created = make_key()
    rolled = api_key_roll(
        key=created.key, grace=timedelta(days=7), actor=Actor.of_user(created.key.user)
    )
    answer = client.post("/oauth/revoke", {"token": created.secret})
    assert answer.status_code == 200
    for secret in (created.secret, rolled.secret):
        assert client.get("/api/v1/workspace", **auth(secret)).json()["error"] == "revoked-key"


def test_device_codes_are_limited_per_address_and_expired_ones_deleted(client, settings):
    settings.DEVICE_CODES_PER_MINUTE = 10
    answers = [start(client) for _ in range(11)]
    assert [a.status_code for a in answers[:10]] == [200] * 10
    refused = answers[10]
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert refused.json()["error"] == "slow_down"
    assert DeviceAuthorization.objects.count() == 10
    later = timezone.now() + timedelta(minutes=15 + 61)
    with time_machine.travel(later):
        assert start(client).status_code == 200
    assert DeviceAuthorization.objects.count() == 1  # the ten expired ones are gone


def test_the_database_holds_one_pending_login_per_user_code(client):
    from django.db import IntegrityError, transaction

    code = start(client).json()["user_code"].replace("-", "")
    original = DeviceAuthorization.objects.get()
    with pytest.raises(IntegrityError), transaction.atomic():
        DeviceAuthorization.objects.create(
            device_code_hash="x" * 64,
            user_code=code,
            client_id="gatehouse-cli",
            installation_id="other",
            device_name="other",
            created_at=original.created_at,
            expires_at=original.expires_at,
        )


def test_oauth_revoke_without_a_token_is_invalid_request(client):
    answer = client.post("/oauth/revoke", {})
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_request"
    assert client.post("/oauth/revoke", {"token": "nonsense"}).json() == {}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_approver_removed_while_the_key_is_minted_keeps_no_key():
    """The membership check runs in the minting transaction with the row locked: a removal
    from the team that has revoked the approver's keys but not yet committed makes the poll
    wait, and then refuse, rather than mint a key the removal missed."""
    from apps.workspaces.signals import place_removed

    owner = owner_of(WorkspaceFactory(name="Acme"))
    workspace = owner.memberships.get().workspace
    admin = MembershipFactory(workspace=workspace, role="admin").user
    body = start(Client()).json()
    browser = Client()
    browser.force_login(admin)
    approve(browser, body["user_code"], workspace)
    removed_but_not_committed = threading.Event()

    def hold_the_removal(**kwargs) -> None:
        removed_but_not_committed.set()
        time.sleep(1.0)  # the removal's transaction stays open: keys revoked, row deleted

    place_removed.connect(hold_the_removal, dispatch_uid="hold")
    polled = []

    def poll_during_the_removal() -> None:
        try:
            removed_but_not_committed.wait(10)
            polled.append(poll(Client(), body["device_code"]).json())
        finally:
            connection.close()

    poller = threading.Thread(target=poll_during_the_removal)
    poller.start()
    try:
        team_remove(membership=Membership.objects.get(user=admin), actor=Actor.of_user(owner))
    finally:
        place_removed.disconnect(dispatch_uid="hold")
        poller.join()
    assert polled[0]["error"] == "access_denied", polled
    assert not ApiKey.objects.filter(user=admin, revoked_at__isnull=True).exists()


def test_a_pending_poll_is_the_protocol_not_a_warning_in_the_log(client, caplog):
    """A device login polls every 5 s until the browser answers: those answers (pending,
    slow_down) are no `Bad Request` WARNING each; a poll with a wrong code still is."""
    code = start(client).json()["device_code"]
    now = timezone.now()
    with caplog.at_level("INFO", logger="django.request"):
        with time_machine.travel(now, tick=False):
            assert poll(client, code).json()["error"] == "authorization_pending"
        with time_machine.travel(now + timedelta(seconds=2), tick=False):
            assert poll(client, code).json()["error"] == "slow_down"
        assert [r for r in caplog.records if r.name == "django.request"] == []
        assert poll(client, "not-a-code").json()["error"] == "invalid_grant"
    (warning,) = [r for r in caplog.records if r.name == "django.request"]
    assert warning.levelname == "WARNING" and warning.getMessage() == "Bad Request: /oauth/token"
