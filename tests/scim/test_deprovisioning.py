"""The identity provider's word reaches the keys (docs/product.md §16), in the request shapes
Okta and Microsoft Entra ID send: suspended at once, restored exactly, removed as Remove does;
never the last active owner, never a service account; SCIM tokens good only at /scim/v2/."""

import json

import pytest
from django.core import mail

from apps.api.scopes import EVERY_SCOPE
from apps.api_keys.models import ApiKey
from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.scim.models import ScimRequest
from apps.scim.tokens import scim_token_create, scim_token_revoke
from apps.service_accounts.services import service_account_create
from apps.workspaces.models import Membership
from tests.client import Client
from tests.conftest import auth, run_tasks
from tests.factories import MembershipFactory, UserFactory, WorkspaceFactory, make_key, owner_of
from tests.oauth.helpers import connect, refresh

pytestmark = pytest.mark.django_db
PATCH_OP = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
OKTA_SUSPEND = {
    "schemas": [PATCH_OP],
    "Operations": [{"op": "replace", "value": {"active": False}}],
}
ENTRA_SUSPEND = {"Operations": [{"op": "Replace", "path": "active", "value": "False"}]}
ENTRA_RESTORE = {"Operations": [{"op": "Replace", "path": "active", "value": "True"}]}


@pytest.fixture
def workspace():
    return WorkspaceFactory(name="Acme")


@pytest.fixture
def owner(workspace):
    return owner_of(workspace, email="olga@acme.com")


@pytest.fixture
def token(workspace, owner):
    return scim_token_create(workspace=workspace, name="Okta", actor=Actor.of_user(owner)).secret


@pytest.fixture
def ada(workspace):
    user = UserFactory(email="ada@acme.com")
    MembershipFactory(workspace=workspace, user=user, role=Membership.Role.ADMIN)
    return user


def scim(client, method, path, token, body=None):
    return getattr(client, method)(
        f"/scim/v2{path}",
        json.dumps(body) if body is not None else None,
        content_type="application/scim+json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def user_id(workspace, user) -> int:
    return Membership.objects.get(workspace=workspace, user=user).pk


def test_okta_finds_the_team_already_there_owners_included(client, workspace, owner, ada, token):
    answer = scim(client, "get", '/Users?filter=userName eq "OLGA@acme.com"', token)
    assert answer.status_code == 200 and answer["Content-Type"] == "application/scim+json"
    found = answer.json()
    assert found["totalResults"] == 1
    assert found["Resources"][0]["userName"] == "olga@acme.com"
    assert found["Resources"][0]["active"] is True
    everyone = scim(client, "get", "/Users?startIndex=1&count=1", token).json()
    assert everyone["totalResults"] == 2 and everyone["itemsPerPage"] == 1


def test_okta_creates_a_person_who_joins_as_an_admin_and_is_told_how_to_sign_in(
    client, workspace, token
):
    body = {
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
        "userName": "grace@acme.com",
        "name": {"givenName": "Grace", "familyName": "Hopper"},
        "emails": [{"primary": True, "value": "grace@acme.com", "type": "work"}],
        "displayName": "Grace Hopper",
        "locale": "en-US",
        "externalId": "00u1abcd",
        "groups": [],
        "password": "ignored-by-gatehouse",
        "active": True,
    }
    answer = scim(client, "post", "/Users", token, body)
    assert answer.status_code == 201, answer.content
    made = answer.json()
    assert made["userName"] == "grace@acme.com" and made["externalId"] == "00u1abcd"
    membership = Membership.objects.get(pk=int(made["id"]))
    assert (membership.role, membership.source) == ("admin", "scim")
    assert membership.user.full_name == "Grace Hopper"
    assert not membership.user.has_usable_password()
    run_tasks()
    assert [m.to for m in mail.outbox] == [["grace@acme.com"]]
    assert "/account/password/reset/" in mail.outbox[0].body
    again = scim(client, "post", "/Users", token, body)
    assert again.status_code == 409 and again.json()["scimType"] == "uniqueness"
    added = AuditEvent.objects.get(action="team.member_added")
    assert added.actor_label == "identity provider (SCIM token Okta)"


def test_suspension_stops_every_key_at_once_and_restoration_brings_them_back(
    client, workspace, owner, ada, token
):
    working = make_key(user=ada, workspace=workspace, name="Nightly sync")
    revoked_meanwhile = make_key(user=ada, workspace=workspace, name="Old script")
    ApiKey.objects.filter(pk=working.key.pk).update(last_used_at=working.key.created_at)
    answer = scim(client, "patch", f"/Users/{user_id(workspace, ada)}", token, OKTA_SUSPEND)
    assert answer.status_code == 200 and answer.json()["active"] is False
    for secret in (working.secret, revoked_meanwhile.secret):
        refused = client.get("/api/v1/workspace", **auth(secret))
        assert refused.status_code == 401 and refused.json()["error"] == "suspended-key"
    # Nothing is deleted, and the keys say why they stopped.
    assert ApiKey.objects.get(pk=working.key.pk).state == "suspended"
    event = AuditEvent.objects.get(action="member.suspended")
    assert event.actor_label == "identity provider (SCIM token Okta)"
    assert event.data["keysSuspended"] == 2
    run_tasks()
    told = [m for m in mail.outbox if "suspended" in m.subject]
    assert [m.to for m in told] == [["olga@acme.com"]]  # the owners, not the person
    assert "Nightly sync" in told[0].body and "/hand-over/" in told[0].body
    assert "Old script" not in told[0].body  # never used: not among the keys in use

    owner_key = make_key(user=owner, workspace=workspace, scopes=EVERY_SCOPE).secret
    gone = client.delete(f"/api/v1/keys/{revoked_meanwhile.key.pk}", **auth(owner_key))
    assert gone.status_code == 204, gone.content  # a suspended key can be revoked
    answer = scim(client, "patch", f"/Users/{user_id(workspace, ada)}", token, ENTRA_RESTORE)
    assert answer.status_code == 200 and answer.json()["active"] is True
    assert client.get("/api/v1/workspace", **auth(working.secret)).status_code == 200
    refused = client.get("/api/v1/workspace", **auth(revoked_meanwhile.secret))
    assert refused.json()["error"] == "revoked-key"  # restoring never brings back a revoked key
    restored = AuditEvent.objects.get(action="member.restored")
    assert restored.data["keysRestored"] == 1


def test_entra_suspends_with_its_capitalised_op_and_string_boolean(client, workspace, ada, token):
    key = make_key(user=ada, workspace=workspace)
    answer = scim(client, "patch", f"/Users/{user_id(workspace, ada)}", token, ENTRA_SUSPEND)
    assert answer.status_code == 200, answer.content
    assert client.get("/api/v1/workspace", **auth(key.secret)).json()["error"] == "suspended-key"
    listed = scim(client, "get", "/Users?filter=active eq false", token).json()
    assert [r["userName"] for r in listed["Resources"]] == ["ada@acme.com"]


def test_a_suspended_person_meets_the_sign_in_page_and_other_workspaces_stay_open(
    client, workspace, ada, token
):
    elsewhere = WorkspaceFactory(name="Side project")
    MembershipFactory(workspace=elsewhere, user=ada, role=Membership.Role.OWNER)
    browser = Client()
    browser.force_login(ada)
    assert browser.get("/integrations/api/").status_code == 200
    scim(client, "patch", f"/Users/{user_id(workspace, ada)}", token, OKTA_SUSPEND)
    page = browser.get("/integrations/api/")
    assert page.status_code == 200 and b"Side project" in page.content
    assert b"Acme" not in page.content.split(b"<main")[-1]
    Membership.objects.filter(workspace=elsewhere).delete()
    closed = browser.get("/integrations/api/")
    assert closed.status_code == 302 and closed["Location"].startswith("/sign-in/")


def test_a_suspended_persons_app_is_refused_its_refresh_and_works_again_once_restored(
    client, workspace, ada, token
):
    browser = Client()
    browser.force_login(ada)
    connected = connect(client, browser, workspace)
    scim(client, "patch", f"/Users/{user_id(workspace, ada)}", token, OKTA_SUSPEND)
    refused = refresh(client, connected["client_id"], connected["refresh_token"])
    assert refused.status_code == 400 and "suspended" in refused.json()["error_description"]
    scim(client, "patch", f"/Users/{user_id(workspace, ada)}", token, ENTRA_RESTORE)
    # The token was not spent by the refusal: the app goes on where it left off.
    again = refresh(client, connected["client_id"], connected["refresh_token"])
    assert again.status_code == 200, again.content


def test_delete_removes_as_remove_does_revoking_every_key(client, workspace, ada, token):
    key = make_key(user=ada, workspace=workspace)
    answer = scim(client, "delete", f"/Users/{user_id(workspace, ada)}", token)
    assert answer.status_code == 204
    assert client.get("/api/v1/workspace", **auth(key.secret)).json()["error"] == "revoked-key"
    assert not Membership.objects.filter(workspace=workspace, user=ada).exists()
    removed = AuditEvent.objects.get(action="team.member_removed")
    assert removed.actor_label == "identity provider (SCIM token Okta)"
    assert (
        scim(client, "get", f"/Users/{answer.wsgi_request.path.split('/')[-1]}", token).status_code
        == 404
    )


def test_the_last_active_owner_is_never_suspended_or_removed(client, workspace, owner, token):
    path = f"/Users/{user_id(workspace, owner)}"
    for method, body in (("patch", OKTA_SUSPEND), ("delete", None)):
        answer = scim(client, method, path, token, body)
        assert answer.status_code == 400, answer.content
        assert answer.json()["scimType"] == "mutability"
        assert "last active owner" in answer.json()["detail"]
    assert Membership.objects.get(workspace=workspace, user=owner).suspended_at is None


def test_service_accounts_are_not_seen_nor_touched(client, workspace, owner, token):
    account = service_account_create(
        workspace=workspace, name="Billing sync", actor=Actor.of_user(owner)
    )
    listed = scim(client, "get", "/Users", token).json()
    assert all(r["userName"] != account.user.email for r in listed["Resources"])
    membership = Membership.objects.get(workspace=workspace, user=account.user)
    gone = scim(client, "patch", f"/Users/{membership.pk}", token, OKTA_SUSPEND)
    assert gone.status_code == 404 and gone.json()["status"] == "404"


def test_a_scim_token_opens_only_scim_and_an_api_key_never_opens_scim(
    client, workspace, owner, ada, token
):
    assert client.get("/api/v1/workspace", **auth(token)).status_code == 401
    api_key = make_key(user=owner, workspace=workspace).secret
    refused = scim(client, "get", "/Users", api_key)
    assert refused.status_code == 401 and "SCIM token" in refused.json()["detail"]
    assert refused["WWW-Authenticate"] == 'Bearer realm="scim"'
    other = WorkspaceFactory(name="Other")
    theirs = scim_token_create(workspace=other, name="Entra", actor=Actor.of_user(owner_of(other)))
    assert (
        scim(client, "get", f"/Users/{user_id(workspace, ada)}", theirs.secret).status_code == 404
    )
    scim_token_revoke(token=theirs.token, actor=Actor.of_user(owner))
    assert scim(client, "get", "/Users", theirs.secret).status_code == 401


def test_bad_filters_and_bodies_get_rfc_7644_errors(client, workspace, token):
    bad = scim(client, "get", '/Users?filter=nickName eq "x"', token)
    assert bad.status_code == 400 and bad.json()["scimType"] == "invalidFilter"
    broken = scim(client, "get", "/Users?filter=userName eq", token)
    assert broken.status_code == 400 and broken.json()["scimType"] == "invalidFilter"
    no_address = scim(client, "post", "/Users", token, {"userName": "no-address"})
    assert no_address.status_code == 400 and no_address.json()["scimType"] == "invalidValue"
    not_json = client.post(
        "/scim/v2/Users", "{", content_type="application/scim+json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )  # fmt: skip
    assert not_json.status_code == 400 and not_json.json()["scimType"] == "invalidSyntax"


def test_each_request_is_kept_with_its_outcome_for_the_owners(client, workspace, ada, token):
    scim(client, "patch", f"/Users/{user_id(workspace, ada)}", token, OKTA_SUSPEND)
    scim(client, "get", '/Users?filter=nickName eq "x"', token)
    kept = list(ScimRequest.objects.filter(workspace=workspace).order_by("pk"))
    assert [(r.method, r.status) for r in kept] == [("PATCH", 200), ("GET", 400)]
    assert "suspended, 0 keys paused" in kept[0].outcome
    assert "nickName" in kept[1].outcome
