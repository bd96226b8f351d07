"""Settings → Single sign-on, the Team page's source and state, "Suspended (identity
provider)" on keys, and SCIM tokens over the API (docs/product.md §16)."""

import json

import pytest

from apps.api.scopes import EVERY_SCOPE
from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.scim.models import ScimToken
from apps.scim.tokens import scim_token_create
from apps.workspaces.models import Membership
from apps.workspaces.services import team_suspend
from tests.client import Client
from tests.conftest import auth
from tests.factories import MembershipFactory, UserFactory, WorkspaceFactory, make_key, owner_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def workspace():
    return WorkspaceFactory(name="Acme")


@pytest.fixture
def owner(workspace):
    return owner_of(workspace, email="olga@acme.com")


@pytest.fixture
def browser(owner):
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def ada(workspace):
    user = UserFactory(email="ada@acme.com")
    MembershipFactory(workspace=workspace, user=user, role=Membership.Role.ADMIN)
    return user


def test_an_owner_makes_a_token_sees_it_once_and_revokes_it(browser, workspace):
    page = browser.get("/settings/single-sign-on/")
    assert page.status_code == 200
    assert b"http://testserver/scim/v2" in page.content or b"/scim/v2" in page.content
    assert b"No SCIM tokens yet" in page.content
    made = browser.post("/settings/identity-provider/", {"name": "Okta"})
    assert made.status_code == 200 and made["Cache-Control"] == "no-store"
    token = ScimToken.objects.get(workspace=workspace)
    secret = made.content.decode().split('data-testid="new-secret">')[1].split("<")[0]
    assert secret.startswith("gst_") and token.hint == f"gst_…{secret[-4:]}"
    assert secret.encode() not in browser.get("/settings/single-sign-on/").content
    refused = browser.post("/settings/identity-provider/", {"name": "  "})
    assert refused.status_code == 400 and b"name must not be empty" in refused.content
    rolled = browser.post(f"/settings/identity-provider/scim-tokens/{token.pk}/roll/")
    new = rolled.content.decode().split('data-testid="new-secret">')[1].split("<")[0]
    assert new.startswith("gst_") and new != secret
    assert Client().get("/scim/v2/Users", HTTP_AUTHORIZATION=f"Bearer {secret}").status_code == 401
    assert Client().get("/scim/v2/Users", HTTP_AUTHORIZATION=f"Bearer {new}").status_code == 200
    browser.post(f"/settings/identity-provider/scim-tokens/{token.pk}/revoke/")
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert AuditEvent.objects.filter(action="scim_token.revoked").count() == 1


def test_the_page_lists_the_providers_last_requests_with_their_outcome(browser, workspace, ada):
    secret = scim_token_create(workspace=workspace, name="Okta", actor=Actor.of_operator("t"))
    Client().patch(
        f"/scim/v2/Users/{Membership.objects.get(user=ada).pk}",
        json.dumps({"Operations": [{"op": "replace", "value": {"active": False}}]}),
        content_type="application/scim+json",
        HTTP_AUTHORIZATION=f"Bearer {secret.secret}",
    )
    page = browser.get("/settings/single-sign-on/").content.decode()
    assert "Recent SCIM requests" in page and "Updated ada@acme.com: suspended" in page


def test_admins_cannot_open_the_identity_provider_settings(workspace, ada):
    admin = Client()
    admin.force_login(ada)
    assert admin.get("/settings/single-sign-on/").status_code == 403
    assert admin.post("/settings/identity-provider/", {"name": "Okta"}).status_code == 403


def test_the_team_page_says_where_each_person_came_from_and_who_is_suspended(
    browser, workspace, owner, ada
):
    key = make_key(user=ada, workspace=workspace, name="Nightly sync")
    membership = Membership.objects.get(user=ada)
    Membership.objects.filter(pk=membership.pk).update(source="scim", external_id="00u1abcd")
    team_suspend(membership=membership, actor=Actor.of_identity_provider("Okta"))
    page = browser.get("/settings/team/").content.decode()
    assert "Suspended (identity provider)" in page and "00u1abcd" in page
    assert f"/settings/team/{membership.pk}/remove/" in page
    keys = browser.get("/integrations/api/?state=all").content.decode()
    assert "Suspended (identity provider)" in keys
    detail = browser.get(f"/integrations/api/keys/{key.key.pk}/").content.decode()
    assert 'data-testid="suspension-state"' in detail and "401 suspended-key" in detail
    filtered = browser.get("/integrations/api/?state=suspended").content.decode()
    assert "Nightly sync" in filtered


def test_scim_tokens_over_the_api_need_an_owners_key_and_show_the_secret_once(
    client, workspace, owner, ada
):
    manager = make_key(user=owner, workspace=workspace, scopes=EVERY_SCOPE).secret
    made = client.post(
        "/api/v1/scim-tokens", {"name": "Entra"}, content_type="application/json",
        **auth(manager),
    )  # fmt: skip
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["secret"].startswith("gst_") and body["token"]["name"] == "Entra"
    listed = client.get("/api/v1/scim-tokens", **auth(manager)).json()["data"]
    assert [t["id"] for t in listed] == [body["token"]["id"]] and "secret" not in listed[0]
    admins = make_key(user=ada, workspace=workspace, scopes=EVERY_SCOPE).secret
    refused = client.get("/api/v1/scim-tokens", **auth(admins))
    assert refused.status_code == 403 and refused.json()["error"] == "insufficient-role"
    gone = client.delete(f"/api/v1/scim-tokens/{body['token']['id']}", **auth(manager))
    assert gone.status_code == 204
    answer = client.get("/scim/v2/Users", HTTP_AUTHORIZATION=f"Bearer {body['secret']}")
    assert answer.status_code == 401
    again = client.delete(f"/api/v1/scim-tokens/{body['token']['id']}", **auth(manager))
    assert again.status_code == 404
