"""The authorization code flow of connected apps, one step at a time over HTTP: discovery, the
consent page, every error redirect of RFC 6749 §4.1.2.1, the exchange, refresh rotation and
reuse, and revocation."""

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
import time_machine
from authlib.oauth2.rfc8414 import AuthorizationServerMetadata
from django.utils import timezone

from apps.api_keys.models import ApiKey, ApiKeyState
from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.oauth.models import OAuthGrant, RefreshToken
from apps.webhooks.models import WebhookDelivery
from apps.webhooks.services import endpoint_create
from apps.workspaces.models import Membership, Workspace
from tests.client import Client
from tests.conftest import auth, run_tasks
from tests.factories import MembershipFactory, WorkspaceFactory, owner_of

from .helpers import (
    REDIRECT,
    RESOURCE,
    approve,
    authorize_url,
    connect,
    exchange,
    pkce,
    redirect_params,
    refresh,
    register,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def workspace():
    return WorkspaceFactory(name="Acme")


@pytest.fixture
def owner(workspace):
    return owner_of(workspace)


@pytest.fixture
def browser(owner):
    client = Client()
    client.force_login(owner)
    return client


def test_discovery_documents_say_what_the_mcp_specification_needs(client):
    resource = client.get("/.well-known/oauth-protected-resource/mcp").json()
    assert resource["resource"] == RESOURCE
    assert resource["authorization_servers"] == ["http://testserver"]
    assert resource["bearer_methods_supported"] == ["header"]
    assert "products:read" in resource["scopes_supported"]
    metadata = client.get("/.well-known/oauth-authorization-server").json()
    AuthorizationServerMetadata(metadata).validate()  # Authlib's own RFC 8414 check
    assert metadata["issuer"] == "http://testserver"
    for endpoint, path in [
        ("authorization_endpoint", "/oauth/authorize"),
        ("token_endpoint", "/oauth/token"),
        ("registration_endpoint", "/oauth/register"),
        ("revocation_endpoint", "/oauth/revoke"),
        ("device_authorization_endpoint", "/oauth/device/code"),
    ]:
        assert metadata[endpoint] == "http://testserver" + path
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["token_endpoint_auth_methods_supported"] == ["none"]
    assert metadata["client_id_metadata_document_supported"] is True
    assert metadata["authorization_response_iss_parameter_supported"] is True
    assert set(metadata["grant_types_supported"]) == {
        "authorization_code",
        "refresh_token",
        "urn:ietf:params:oauth:grant-type:device_code",
    }


def test_the_issuer_is_site_url_in_production(client, settings):
    settings.OAUTH_ISSUER = "https://gatehouse.example.com"
    metadata = client.get("/.well-known/oauth-authorization-server").json()
    assert metadata["issuer"] == "https://gatehouse.example.com"
    resource = client.get("/.well-known/oauth-protected-resource/mcp").json()
    assert resource["resource"] == "https://gatehouse.example.com/mcp"
    answer = client.post("/mcp", b"{}", content_type="application/json")
    assert (
        'resource_metadata="https://gatehouse.example.com/.well-known/'
        in (answer["WWW-Authenticate"])
    )


def test_a_person_connects_an_app_which_then_calls_the_api_with_its_mcp_key(
    client, browser, workspace, owner
):
    client_id = register(client)["client_id"]
    verifier, challenge = pkce()
    url = authorize_url(client_id, challenge)
    page = browser.get(url).content.decode()
    assert "Test Assistant" in page and ">Unverified</span>" in page
    assert "127.0.0.1:33418" in page  # the redirect's host
    params = redirect_params(approve(browser, url, workspace, ("products:read", "pages:read")))
    assert params["state"] == "st4te"
    answer = exchange(client, client_id, params["code"], verifier)
    assert answer.status_code == 200 and answer["Cache-Control"] == "no-store"
    token = answer.json()
    assert token["token_type"] == "Bearer" and token["expires_in"] == 3600
    assert token["scope"] == "pages:read products:read"
    assert token["access_token"].startswith("gwk_") and token["refresh_token"].startswith("grt_")
    key = ApiKey.objects.get()
    assert key.tag == ApiKey.Tag.MCP and key.user == owner and key.workspace == workspace
    assert timedelta(minutes=59) < key.expires_at - timezone.now() <= timedelta(hours=1)
    assert client.get("/api/v1/products", **auth(token["access_token"])).status_code == 200
    refused = client.post("/api/v1/pages", {"title": "x"}, **auth(token["access_token"]))
    assert refused.status_code == 403  # pages:write was asked for, and unticked
    assert AuditEvent.objects.filter(action="oauth.authorized", key=key).count() == 1
    assert not RefreshToken.objects.filter(token_hash=token["refresh_token"]).exists()  # hashed


def test_the_answer_to_the_app_names_site_url_as_its_issuer(client, browser, settings):
    settings.OAUTH_ISSUER = "https://gatehouse.example.com"
    client_id = register(client)["client_id"]
    url = authorize_url(client_id, pkce()[1], resource="https://gatehouse.example.com/mcp")
    answer = browser.post(url, {"decision": "deny"})
    query = parse_qs(urlsplit(answer["Location"]).query)
    assert query["iss"] == ["https://gatehouse.example.com"]
    assert query["error"] == ["access_denied"]


def test_denying_sends_access_denied_with_the_state_and_issues_nothing(client, browser):
    client_id = register(client)["client_id"]
    url = authorize_url(client_id, pkce()[1])
    params = redirect_params(browser.post(url, {"decision": "deny"}))
    assert params["error"] == "access_denied" and params["state"] == "st4te"
    assert "code" not in params
    assert not ApiKey.objects.exists()


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"code_challenge": None, "code_challenge_method": None}, "invalid_request"),
        ({"code_challenge": None}, "invalid_request"),
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"code_challenge_method": None}, "invalid_request"),
        ({"resource": None}, "invalid_target"),
        ({"resource": "http://testserver/api/v1"}, "invalid_target"),
        ({"scope": "products:read admin:everything"}, "invalid_scope"),
        ({"scope": "products:read keys:read"}, "invalid_scope"),  # only `gatehouse login` may
        ({"response_type": "token"}, "unsupported_response_type"),
    ],
)
def test_errors_with_a_verified_redirect_go_back_to_the_app(client, browser, change, error):
    client_id = register(client)["client_id"]
    params = redirect_params(browser.get(authorize_url(client_id, pkce()[1], **change)))
    assert params["error"] == error and params["state"] == "st4te"
    assert "code" not in params


def test_errors_without_a_verified_redirect_are_shown_here_and_never_redirected(client, browser):
    client_id = register(client)["client_id"]
    _, challenge = pkce()
    for url in [
        authorize_url("no-such-client", challenge),
        authorize_url(client_id, challenge, redirect_uri="https://evil.example/callback"),
        authorize_url(client_id, challenge, redirect_uri="http://127.0.0.1:33418/other"),
        authorize_url(client_id, challenge, redirect_uri=None),
    ]:
        page = browser.get(url)
        assert page.status_code == 400 and "Location" not in page
        assert b"This app cannot connect" in page.content


def test_a_loopback_redirect_may_come_back_on_any_port(client, browser, workspace):
    client_id = register(client)["client_id"]
    url = authorize_url(client_id, pkce()[1], redirect_uri="http://127.0.0.1:50123/callback")
    answer = approve(browser, url, workspace)
    assert answer["Location"].startswith("http://127.0.0.1:50123/callback?code=")


def test_a_code_is_used_once_with_its_own_verifier_and_redirect(client, browser, workspace):
    client_id = register(client)["client_id"]
    verifier, challenge = pkce()
    code = redirect_params(approve(browser, authorize_url(client_id, challenge), workspace))["code"]
    wrong_verifier = exchange(client, client_id, code, pkce()[0])
    assert wrong_verifier.json()["error"] == "invalid_grant"
    wrong_redirect = exchange(
        client, client_id, code, verifier, redirect_uri="http://127.0.0.1:33418/other"
    )
    assert wrong_redirect.json()["error"] == "invalid_grant"
    assert exchange(client, client_id, code, verifier).status_code == 200
    again = exchange(client, client_id, code, verifier)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert ApiKey.objects.count() == 1


def test_a_code_expires_after_five_minutes(client, browser, workspace):
    client_id = register(client)["client_id"]
    verifier, challenge = pkce()
    code = redirect_params(approve(browser, authorize_url(client_id, challenge), workspace))["code"]
    with time_machine.travel(timezone.now() + timedelta(minutes=6)):
        assert exchange(client, client_id, code, verifier).json()["error"] == "invalid_grant"


def test_a_refresh_gives_the_same_key_a_new_secret_and_a_new_hour(client, browser, workspace):
    first = connect(client, browser, workspace)
    later = timezone.now() + timedelta(hours=2)
    with time_machine.travel(later):
        expired = client.get("/api/v1/products", **auth(first["access_token"]))
        assert expired.json()["error"] == "expired-key"
        answer = refresh(client, first["client_id"], first["refresh_token"])
        assert answer.status_code == 200 and answer["Cache-Control"] == "no-store"
        second = answer.json()
        assert second["refresh_token"] != first["refresh_token"]
        assert second["expires_in"] == 3600
        assert client.get("/api/v1/products", **auth(second["access_token"])).status_code == 200
        # A roll without grace: the old secret no longer opens anything.
        old = client.get("/api/v1/products", **auth(first["access_token"]))
        assert old.status_code == 401
        assert ApiKey.objects.count() == 1 and OAuthGrant.objects.count() == 1
        third = refresh(client, first["client_id"], second["refresh_token"])
        assert third.status_code == 200
    # oauth.refreshed is written at most once a day.
    assert AuditEvent.objects.filter(action="oauth.refreshed").count() == 1


def test_a_reused_refresh_token_revokes_the_grant_and_its_live_key(client, browser, workspace):
    first = connect(client, browser, workspace)
    second = refresh(client, first["client_id"], first["refresh_token"]).json()
    reused = refresh(client, first["client_id"], first["refresh_token"])
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    key = ApiKey.objects.get()
    assert key.state_at(timezone.now()) == ApiKeyState.REVOKED
    assert client.get("/api/v1/products", **auth(second["access_token"])).status_code == 401
    assert refresh(client, first["client_id"], second["refresh_token"]).status_code == 400
    assert OAuthGrant.objects.get().revoked_at is not None
    assert AuditEvent.objects.filter(action="oauth.refresh_reused").count() == 1


def test_a_refresh_token_lives_90_days(client, browser, workspace):
    first = connect(client, browser, workspace)
    with time_machine.travel(timezone.now() + timedelta(days=91)):
        late = refresh(client, first["client_id"], first["refresh_token"])
    assert late.status_code == 400 and late.json()["error"] == "invalid_grant"


def test_every_rfc6749_section_5_2_error_of_the_token_endpoint(client, browser, workspace):
    first = connect(client, browser, workspace)
    client_id = first["client_id"]
    cases = {
        "invalid_request": {"grant_type": "authorization_code", "client_id": client_id},
        "invalid_client": {"grant_type": "refresh_token", "refresh_token": "x", "client_id": "no"},
        "invalid_grant": {
            "grant_type": "refresh_token",
            "refresh_token": "grt_x",
            "client_id": client_id,
        },
        "unauthorized_client": {
            "grant_type": "authorization_code",
            "code": "x",
            "client_id": "gatehouse-cli",
        },
        "unsupported_grant_type": {"grant_type": "password", "username": "a", "password": "b"},
        "invalid_scope": {
            "grant_type": "refresh_token",
            "refresh_token": first["refresh_token"],
            "client_id": client_id,
            "scope": "products:read products:write",
        },
    }
    for error, form in cases.items():
        answer = client.post("/oauth/token", form)
        assert answer.status_code == 400, (error, answer.content)
        assert answer.json()["error"] == error, (error, answer.content)
        assert answer["Cache-Control"] == "no-store"
    # The last one: a token for another resource (RFC 8707).
    second = refresh(client, client_id, first["refresh_token"], resource="https://other.example/")
    assert second.status_code == 400 and second.json()["error"] == "invalid_target"
    missing = client.post("/oauth/token", {"client_id": client_id})
    assert missing.json()["error"] == "invalid_request"


def test_connected_apps_lists_each_grant_once_and_disconnects_it(client, browser, workspace, owner):
    endpoint = endpoint_create(
        workspace,
        url="https://hooks.example.com/in",
        event_types=["oauth.authorized", "oauth.revoked"],
        actor=Actor.of_user(owner),
    )
    first = connect(client, browser, workspace)
    refresh(client, first["client_id"], first["refresh_token"])
    page = browser.get("/integrations/connected-apps/").content.decode()
    assert page.count('data-testid="connected-app"') == 1 and "Test Assistant" in page
    # The key list is the whole inventory: the app's key is in it, tagged MCP, linking to its
    # app; the kind filter finds it, and "Workspace" (the keys people made) leaves it out.
    keys_page = browser.get("/integrations/api/").content.decode()
    assert "Test Assistant" in keys_page
    assert 'class="tag tag--mcp" href="/integrations/connected-apps/"' in keys_page
    assert "Test Assistant" in browser.get("/integrations/api/?kind=mcp").content.decode()
    assert "Test Assistant" not in browser.get("/integrations/api/?kind=workspace").content.decode()
    grant = OAuthGrant.objects.get()
    answer = browser.post(f"/integrations/connected-apps/{grant.pk}/revoke/", follow=True)
    assert "disconnected" in answer.content.decode()
    assert client.get("/api/v1/products", **auth(first["access_token"])).status_code == 401
    assert ApiKey.objects.get().revoked_at is not None
    run_tasks()
    events = set(
        WebhookDelivery.objects.filter(endpoint=endpoint.endpoint).values_list(
            "event_type", flat=True
        )
    )
    assert events == {"oauth.authorized", "oauth.revoked"}


def test_an_app_disconnects_itself_by_revoking_its_refresh_token(client, browser, workspace):
    first = connect(client, browser, workspace)
    answer = client.post(
        "/oauth/revoke", {"token": first["refresh_token"], "client_id": first["client_id"]}
    )
    assert answer.status_code == 200
    assert OAuthGrant.objects.get().revoked_at is not None
    assert client.get("/api/v1/products", **auth(first["access_token"])).status_code == 401
    other = register(client, client_name="Other")["client_id"]
    second = connect(client, browser, workspace)
    foreign = client.post("/oauth/revoke", {"token": second["refresh_token"], "client_id": other})
    assert foreign.status_code == 400  # another app's refresh token: refused, kept
    assert OAuthGrant.objects.filter(revoked_at__isnull=True).count() == 1


def test_another_workspace_cannot_see_or_revoke_a_grant(client, browser, workspace):
    connect(client, browser, workspace)
    grant = OAuthGrant.objects.get()
    stranger = owner_of(WorkspaceFactory(name="Other"))
    other = Client()
    other.force_login(stranger)
    assert "Test Assistant" not in other.get("/integrations/connected-apps/").content.decode()
    assert other.post(f"/integrations/connected-apps/{grant.pk}/revoke/").status_code == 404
    assert OAuthGrant.objects.get().revoked_at is None


def test_a_member_connects_with_a_member_key_listed_in_the_portal(client, workspace):
    member = MembershipFactory(workspace=workspace, role=Membership.Role.MEMBER).user
    browser = Client()
    browser.force_login(member)
    client_id = register(client)["client_id"]
    verifier, challenge = pkce()
    url = authorize_url(client_id, challenge, scope=None)
    page = browser.get(url).content.decode()
    assert "member key" in page and "Products" not in page
    widened = approve(browser, url, workspace, ("products:read",))
    assert widened.status_code == 400 and not ApiKey.objects.exists()
    params = redirect_params(approve(browser, url, workspace, ("communities:read",)))
    token = exchange(client, client_id, params["code"], verifier).json()
    assert token["access_token"].startswith("gmk_")
    key = ApiKey.objects.get()
    assert key.kind == ApiKey.Kind.MEMBER and key.scopes == ["communities:read"]
    portal = browser.get("/portal/settings/connected-apps/").content.decode()
    assert "Test Assistant" in portal
    answer = browser.post(f"/portal/settings/connected-apps/{key.oauth_grant.pk}/revoke/")
    assert answer.status_code == 302
    assert ApiKey.objects.get().revoked_at is not None


def test_the_consent_page_asks_for_the_password_again_after_a_while(client, browser, settings):
    client_id = register(client)["client_id"]
    url = authorize_url(client_id, pkce()[1])
    assert browser.get(url).status_code == 200
    later = timezone.now() + timedelta(seconds=settings.ACCOUNT_REAUTHENTICATION_TIMEOUT + 60)
    with time_machine.travel(later):
        answer = browser.get(url)
    assert answer.status_code == 302 and "/account/reauthenticate/" in answer["Location"]


def test_a_workspace_requiring_two_factor_is_closed_without_it(client, browser, workspace):
    Workspace.objects.filter(pk=workspace.pk).update(require_two_factor=True)
    client_id = register(client)["client_id"]
    url = authorize_url(client_id, pkce()[1])
    page = browser.get(url)
    assert page.status_code == 403 and b"two-factor" in page.content
    assert approve(browser, url, workspace).status_code == 403
    assert not ApiKey.objects.exists()


def test_restrictions_set_on_the_consent_page_hold_on_the_key(client, browser, workspace):
    client_id = register(client)["client_id"]
    verifier, challenge = pkce()
    url = authorize_url(client_id, challenge)
    answer = approve(browser, url, workspace, networks="203.0.113.0/24", rate_limit="30")
    params = redirect_params(answer)
    token = exchange(client, client_id, params["code"], verifier).json()
    key = ApiKey.objects.get()
    assert key.allowed_networks == ["203.0.113.0/24"] and key.rate_limit_per_minute == 30
    refused = client.get("/api/v1/products", **auth(token["access_token"]))
    assert refused.status_code == 403  # the test client calls from 127.0.0.1


def test_the_redirect_matches_exactly_what_was_registered(client):
    for bad in (["http://evil.example/cb"], ["javascript:alert(1)"], [], "x"):
        answer = client.post(
            "/oauth/register",
            {"client_name": "Bad", "redirect_uris": bad},
            content_type="application/json",
        )
        assert answer.status_code == 400, bad
        assert answer.json()["error"] in ("invalid_redirect_uri", "invalid_client_metadata")
    assert REDIRECT.startswith("http://127.0.0.1")


def test_the_workspace_is_switchable_and_never_one_the_person_is_not_in(client, browser, owner):
    second = WorkspaceFactory(name="Second School")
    MembershipFactory(workspace=second, user=owner, role=Membership.Role.ADMIN)
    stranger = WorkspaceFactory(name="Not Mine")
    client_id = register(client)["client_id"]
    verifier, challenge = pkce()
    url = authorize_url(client_id, challenge)
    switched = browser.get(url + f"&workspace={second.pk}").content.decode()
    assert 'data-testid="workspace-name">Second School<' in switched
    foreign = approve(browser, url, stranger)
    assert foreign.status_code == 400 and not ApiKey.objects.exists()
    params = redirect_params(approve(browser, url + f"&workspace={second.pk}", second))
    exchange(client, client_id, params["code"], verifier)
    assert ApiKey.objects.get().workspace == second


def test_a_key_revoked_on_its_own_page_ends_the_connection(client, browser, workspace, owner):
    from apps.api_keys.services import api_key_revoke

    first = connect(client, browser, workspace)
    api_key_revoke(key=ApiKey.objects.get(), actor=Actor.of_user(owner))
    refused = refresh(client, first["client_id"], first["refresh_token"])
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
    assert OAuthGrant.objects.get().revoked_at is not None
    page = browser.get("/integrations/connected-apps/").content.decode()
    assert 'data-testid="connected-app"' not in page and "Disconnected" in page
