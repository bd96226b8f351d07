"""Handing a person's key over to a service account (docs/product.md §12), thought through as an
attacker would: during the grace the old secret acts as the new key only, and it stops the
moment the grace ends, the new key is revoked or rolled, or the old secret is named by a leak
report, an operator's revokeapikey or its holder's RFC 7009 revocation."""

import io
from datetime import timedelta

import pytest
import time_machine
from django.core.management import call_command
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.api_keys.rolling import api_key_roll
from apps.api_keys.services import api_key_revoke
from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.common.validation import InvalidInput
from apps.service_accounts.handover import key_hand_over
from apps.service_accounts.services import service_account_create
from apps.workspaces.models import Workspace
from tests.conftest import auth
from tests.factories import make_key

pytestmark = pytest.mark.django_db
HOUR = timedelta(hours=1)


@pytest.fixture
def account(workspace, owner):
    return service_account_create(workspace=workspace, name="CI deploy", actor=Actor.of_user(owner))


@pytest.fixture
def admins_key(admin):
    return make_key(user=admin, scopes=["pages:read", "pages:write"], name="Deploy hook")


def status(client, secret):
    answer = client.get("/api/v1/workspace", **auth(secret))
    return answer.status_code, answer.json().get("userEmail") or answer.json().get("error")


def hand_over(owner, admins_key, account, grace=HOUR):
    return key_hand_over(
        key=admins_key.key, account=account, grace=grace, actor=Actor.of_user(owner)
    )


def test_the_new_key_is_the_old_one_under_the_account_and_the_old_one_is_revoked(
    client, owner, admins_key, account
):
    new = hand_over(owner, admins_key, account, grace=timedelta(0))
    old = ApiKey.objects.get(pk=admins_key.key.pk)
    assert old.revoked_at is not None
    assert (new.key.name, new.key.scopes, new.key.user_id) == (
        "Deploy hook",
        ["pages:read", "pages:write"],
        account.user_id,
    )
    assert new.key.expires_at == old.expires_at
    assert status(client, new.secret) == (200, account.user.email)
    assert status(client, admins_key.secret) == (401, "revoked-key")


def test_the_old_secret_acts_as_the_new_key_until_the_grace_ends(
    client, owner, admins_key, account
):
    hand_over(owner, admins_key, account)
    assert status(client, admins_key.secret) == (200, account.user.email)
    with time_machine.travel(timezone.now() + HOUR + timedelta(seconds=1)):
        assert status(client, admins_key.secret)[0] == 401


def test_revoking_or_rolling_the_new_key_ends_the_grace(client, owner, admin, admins_key, account):
    new = hand_over(owner, admins_key, account)
    api_key_roll(key=new.key, grace=timedelta(0), actor=Actor.of_user(owner))
    assert status(client, admins_key.secret)[0] == 401

    other = make_key(user=admin, scopes=["pages:read"], name="Second hook")
    again = key_hand_over(key=other.key, account=account, grace=HOUR, actor=Actor.of_user(owner))
    assert status(client, other.secret)[0] == 200
    api_key_revoke(key=again.key, actor=Actor.of_user(owner))
    assert status(client, other.secret)[0] == 401


def test_the_old_secret_has_the_new_key_s_rights_only(client, owner, admins_key, account):
    from apps.api_keys.narrowing import api_key_narrow

    new = hand_over(owner, admins_key, account)
    answer = client.get("/api/v1/keys", **auth(admins_key.secret))
    assert answer.status_code == 403  # the new key holds no keys:read, as the old one held none
    # Narrowed after the hand-over, the new key's rights are the old secret's: the old key's
    # (pages:read and pages:write) no longer count.
    api_key_narrow(key=new.key, actor=Actor.of_user(owner), scopes=["pages:read"])
    assert client.get("/api/v1/pages", **auth(admins_key.secret)).status_code == 200
    created = client.post(
        "/api/v1/pages",
        {"title": "Launch", "slug": "launch", "body": "Soon"},
        content_type="application/json",
        **auth(admins_key.secret),
    )
    assert created.status_code == 403 and created.json()["error"] == "insufficient-scope"


def test_a_leak_report_naming_the_old_secret_ends_the_grace_only(
    client, owner, admins_key, account, settings
):
    from tests.leaks.test_reports import report, send  # noqa: PLC0415 - the reports' own helpers

    new = hand_over(owner, admins_key, account)
    github_key = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.ec")
    private = github_key.generate_private_key(github_key.SECP256R1())
    import json

    from apps.leaks.reports import parse_public_keys
    from tests.leaks.test_reports import pem

    settings.SECRET_SCANNING_PUBLIC_KEYS = json.dumps(
        {"public_keys": [{"key_identifier": "current-id", "key": pem(private), "is_current": True}]}
    )
    parse_public_keys.cache_clear()
    answered = send(client, report(admins_key.secret), private)
    assert answered.status_code == 200 and answered.json()[0]["label"] == "true_positive"
    assert status(client, admins_key.secret)[0] == 401
    assert status(client, new.secret) == (200, account.user.email)
    assert AuditEvent.objects.filter(action="key.grace_ended", key=new.key).exists()
    parse_public_keys.cache_clear()


def test_revoking_the_old_secret_by_rfc_7009_ends_the_grace_only(
    client, owner, admins_key, account
):
    """Its holder revoking the old secret (`gatehouse logout`, an app disconnecting): the
    secret stops at once, though the key it was found to be was revoked already."""
    new = hand_over(owner, admins_key, account)
    assert status(client, admins_key.secret) == (200, account.user.email)
    answer = client.post("/oauth/revoke", {"token": admins_key.secret})
    assert answer.status_code == 200
    assert status(client, admins_key.secret)[0] == 401
    assert status(client, new.secret) == (200, account.user.email)
    event = AuditEvent.objects.get(action="key.grace_ended", key=new.key)
    assert event.data == {"reason": "revoked"}


def test_revokeapikey_naming_the_old_secret_ends_the_grace_only(client, owner, admins_key, account):
    new = hand_over(owner, admins_key, account)
    out = io.StringIO()
    call_command("revokeapikey", admins_key.secret, stdout=out)
    assert (
        "already revoked" in out.getvalue()
        and "Ended the hand-over grace of 1 key" in out.getvalue()
    )
    assert admins_key.secret not in out.getvalue()
    assert status(client, admins_key.secret)[0] == 401
    assert status(client, new.secret) == (200, account.user.email)


def test_one_audit_event_names_both_keys(owner, admins_key, account):
    new = hand_over(owner, admins_key, account)
    event = AuditEvent.objects.get(action="key.handed_over")
    assert event.key_id == new.key.pk
    assert event.data["fromKey"]["id"] == admins_key.key.pk
    assert event.data["serviceAccount"]["id"] == account.pk


def test_the_expiry_is_capped_by_the_policy(owner, workspace, account, admin):
    unbounded = make_key(user=admin, expires_in=None)
    Workspace.objects.filter(pk=workspace.pk).update(
        key_allow_no_expiry=False, key_max_lifetime_days=30
    )
    account.workspace.refresh_from_db()
    new = key_hand_over(
        key=unbounded.key, account=account, grace=timedelta(0), actor=Actor.of_user(owner)
    )
    assert new.key.expires_at is not None
    assert new.key.expires_at - timezone.now() <= timedelta(days=30)


def test_what_cannot_be_handed_over_is_refused(owner, admin, admins_key, account):
    with pytest.raises(InvalidInput):
        hand_over(owner, admins_key, account, grace=timedelta(days=7))
    cli = make_key(user=admin, tag="cli", scopes=["pages:read"])
    with pytest.raises(InvalidInput):
        hand_over(owner, cli, account)
    api_key_revoke(key=admins_key.key, actor=Actor.of_user(owner))
    with pytest.raises(InvalidInput):
        hand_over(owner, admins_key, account)


def test_an_owner_cannot_hand_over_their_own_key(owner, account):
    own = make_key(user=owner, scopes=["pages:read"], name="Mine")
    with pytest.raises(InvalidInput, match="own key"):
        key_hand_over(key=own.key, account=account, grace=HOUR, actor=Actor.of_user(owner))
    assert ApiKey.objects.get(pk=own.key.pk).revoked_at is None


def test_only_an_owner_hands_over(admin, admins_key, account):
    from django.core.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        hand_over(admin, admins_key, account)


def test_the_old_keys_page_says_where_it_went_and_until_when_its_secret_works(
    client, owner, admins_key, account
):
    """PRODUCT §12: the old key's page names the service account's new key, links to it, and
    says until when the old secret works as it; no incident panel, no Re-create."""
    new = hand_over(owner, admins_key, account, grace=HOUR)
    page = client.get(f"/integrations/api/keys/{admins_key.key.pk}/").content.decode()
    assert "Handed over to the service account CI deploy" in page
    assert f'href="/integrations/api/keys/{new.key.pk}/"' in page
    assert "Its secret still works, as the service account's key, until" in page
    assert "What this key did" not in page and ">Re-create<" not in page
    assert 'class="badge badge--handed-over">Handed over<' in page
    with time_machine.travel(timezone.now() + 2 * HOUR, tick=False):
        client.force_login(owner)
        later = client.get(f"/integrations/api/keys/{admins_key.key.pk}/").content.decode()
        assert "and has stopped: only the new secret works" in later
    # A key revoked for any other reason still shows what it did.
    plain = make_key(user=owner, name="Plain")
    api_key_revoke(key=plain.key, actor=Actor.of_user(owner))
    revoked = client.get(f"/integrations/api/keys/{plain.key.pk}/").content.decode()
    assert "What this key did" in revoked and "Handed over" not in revoked
