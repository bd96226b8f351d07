"""What clients nobody here wrote send, answered as they expect (docs/product.md §6.1
"Interoperability"): native apps' own redirect schemes, a bare RFC 8628 device client, RFC 6749
§5.2's exact errors, the RFC 9728 document at its one address, and the MCP scope challenge."""

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from apps.api_keys.models import ApiKey
from tests.client import Client
from tests.conftest import auth
from tests.factories import WorkspaceFactory, make_key, owner_of
from tests.oauth.helpers import (
    RESOURCE,
    approve,
    authorize_url,
    connect,
    exchange,
    pkce,
)

pytestmark = pytest.mark.django_db

# Registration bodies as the desktop clients send them (their public documentation and issue
# trackers): each must be accepted whole, or Connect stops before the browser opens.
DESKTOP_REGISTRATIONS = {
    "cursor": {
        "client_name": "Cursor",
        "redirect_uris": [
            "cursor://anysphere.cursor-mcp/oauth/callback",
            "https://www.cursor.com/agents/mcp/oauth/callback",
            "http://localhost:8787/callback",
        ],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    },
    "vscode": {
        "client_name": "Visual Studio Code",
        "redirect_uris": ["http://127.0.0.1:33418/", "https://vscode.dev/redirect"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    },
    "claude": {
        "client_name": "Claude",
        "redirect_uris": ["https://claude.ai/api/mcp/auth_callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    },
    "claude-code": {
        "client_name": "Claude Code (gatehouse)",
        "redirect_uris": ["http://localhost:54212/callback"],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    },
    "native-reverse-dns": {
        "client_name": "An app by RFC 8252 §7.1's example",
        "redirect_uris": ["com.example.app:/oauth2redirect/example-provider"],
    },
}

CURSOR_CALLBACK = "cursor://anysphere.cursor-mcp/oauth/callback"


def _register(client, body):
    return client.post("/oauth/register", json.dumps(body), content_type="application/json")


@pytest.mark.parametrize("app", DESKTOP_REGISTRATIONS)
def test_each_desktop_clients_registration_is_accepted_whole(client, app):
    body = DESKTOP_REGISTRATIONS[app]
    answer = _register(client, body)
    assert answer.status_code == 201, answer.content
    assert answer.json()["redirect_uris"] == body["redirect_uris"]


@pytest.mark.parametrize(
    "uri",
    [
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "file:///etc/passwd",
        "blob:https://evil.example/1",
        "about:blank",
        "vbscript:msgbox",
        "filesystem:https://evil.example/temporary/x",
        "ws://127.0.0.1:9/cb",
        "wss://evil.example/cb",
        # Schemes that hand an address to a browser, which opens it wherever it says.
        "x-safari-https://evil.example/cb",
        "x-safari-http://evil.example/cb",
        "microsoft-edge:https://evil.example/cb",
        "microsoft-edge-https://evil.example/cb",
        "googlechromes://evil.example/cb",
        "firefox://open-url?url=https://evil.example/cb",
        "opera-https://evil.example/cb",
        "com.example.launcher:https://evil.example/cb",
        "com.example.launcher://https://evil.example/cb",
        "my-https://evil.example/cb",
    ],
)
def test_a_scheme_the_browser_runs_is_refused_naming_the_address(client, uri):
    body = {"client_name": "X", "redirect_uris": ["https://ok.example/cb", uri]}
    answer = _register(client, body)
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_redirect_uri"  # RFC 7591 §3.2.2
    scheme = uri.split(":")[0].lower()
    assert f"uses {scheme}:" in answer.json()["error_description"]
    assert uri[:20].replace('"', "") in answer.json()["error_description"]


def test_plain_http_to_another_host_is_still_refused(client):
    answer = _register(client, {"redirect_uris": ["http://evil.example/cb"]})
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_redirect_uri"
    assert "http://evil.example/cb" in answer.json()["error_description"]


def test_a_native_app_gets_its_code_at_its_own_scheme_and_the_page_names_it(client):
    workspace = WorkspaceFactory(name="Acme")
    browser = Client()
    browser.force_login(owner_of(workspace))
    client_id = _register(client, DESKTOP_REGISTRATIONS["cursor"]).json()["client_id"]
    verifier, challenge = pkce()
    url = authorize_url(client_id, challenge, redirect_uri=CURSOR_CALLBACK)
    page = browser.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-testid="redirect-app">returns to the app <code>cursor</code>' in html
    # The form may end at the app: the scheme as a whole (Chromium matches no host in cursor://).
    assert "form-action 'self' cursor:;" in page["Content-Security-Policy"]
    answer = approve(browser, url, workspace)
    assert answer.status_code == 302
    location = answer["Location"]
    assert location.startswith(CURSOR_CALLBACK + "?")
    params = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
    assert params["state"] == "st4te" and params["iss"] == "http://testserver"
    token = exchange(client, client_id, params["code"], verifier, redirect_uri=CURSOR_CALLBACK)
    assert token.status_code == 200, token.content
    # Matched exactly: another path of the same scheme is not this app's address.
    other = authorize_url(client_id, challenge, redirect_uri="cursor://anysphere.cursor-mcp/x")
    assert browser.get(other).status_code == 400


def test_a_generic_device_client_needs_only_client_id_and_scope(client):
    from apps.devices.models import DeviceAuthorization
    from tests.devices.test_device_grant import approve as approve_device
    from tests.devices.test_device_grant import poll

    workspace = WorkspaceFactory(name="Acme")
    browser = Client()
    browser.force_login(owner_of(workspace))
    secrets = []
    for _ in range(2):
        started = client.post(
            "/oauth/device/code", {"client_id": "gatehouse-cli", "scope": "products:read"}
        )
        assert started.status_code == 200, started.content
        login = DeviceAuthorization.objects.latest("id")
        assert login.device_name == "Gatehouse CLI from 127.0.0.1"
        approve_device(browser, started.json()["user_code"], workspace, scopes=["products:read"])
        polled = poll(client, started.json()["device_code"])
        assert polled.status_code == 200, polled.content
        secrets.append(polled.json()["access_token"])
    # No installation named: each login is a key of its own; the first one still works.
    for secret in secrets:
        assert client.get("/api/v1/workspace", **auth(secret)).status_code == 200
    names = list(ApiKey.objects.filter(tag="cli").values_list("name", flat=True))
    assert names == ["Gatehouse CLI from 127.0.0.1"] * 2


def test_a_code_exchanged_without_its_redirect_uri_is_invalid_request(client):
    workspace = WorkspaceFactory(name="Acme")
    browser = Client()
    browser.force_login(owner_of(workspace))
    client_id = _register(client, DESKTOP_REGISTRATIONS["claude-code"]).json()["client_id"]
    verifier, challenge = pkce()
    redirect = "http://localhost:54212/callback"
    url = authorize_url(client_id, challenge, redirect_uri=redirect)
    location = approve(browser, url, workspace)["Location"]
    code = parse_qs(urlsplit(location).query)["code"][0]
    answer = exchange(client, client_id, code, verifier, redirect_uri=None)
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_request"
    assert "redirect_uri" in answer.json()["error_description"]
    # The code is still good with its address: a malformed request used nothing up.
    assert exchange(client, client_id, code, verifier, redirect_uri=redirect).status_code == 200


@pytest.mark.parametrize("path", ["/oauth/token", "/oauth/revoke", "/oauth/device/code"])
def test_basic_client_credentials_are_401_invalid_client_with_a_basic_challenge(client, path):
    answer = client.post(
        path,
        {"grant_type": "refresh_token", "refresh_token": "x", "token": "x"},
        HTTP_AUTHORIZATION="Basic Z2F0ZWhvdXNlLWNsaTpzZWNyZXQ=",
    )
    assert answer.status_code == 401
    assert answer.json()["error"] == "invalid_client"
    assert answer["WWW-Authenticate"].startswith("Basic ")


def test_the_protected_resource_document_lives_only_at_its_suffixed_path(client):
    assert client.get("/.well-known/oauth-protected-resource").status_code == 404
    document = client.get("/.well-known/oauth-protected-resource/mcp").json()
    assert document["resource"] == RESOURCE


def test_too_many_registrations_are_not_slow_down(client, settings):
    settings.OAUTH_REGISTRATIONS_PER_MINUTE = 1
    assert _register(client, DESKTOP_REGISTRATIONS["claude"]).status_code == 201
    refused = _register(client, DESKTOP_REGISTRATIONS["claude"])
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert refused.json()["error"] == "temporarily_unavailable"


def test_in_development_the_issuer_follows_the_address_asked(client, settings):
    settings.OAUTH_ISSUER = ""
    for host in ("localhost:8000", "127.0.0.1:8000"):
        resource = client.get("/.well-known/oauth-protected-resource/mcp", HTTP_HOST=host)
        assert resource.json()["resource"] == f"http://{host}/mcp"
        server = client.get("/.well-known/oauth-authorization-server", HTTP_HOST=host)
        assert server.json()["issuer"] == f"http://{host}"


def _call(client, secret: str, tool: str, arguments: dict | None = None):
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments or {}},
    }
    return client.post(
        "/mcp",
        json.dumps(body),
        content_type="application/json",
        HTTP_ACCEPT="application/json, text/event-stream",
        HTTP_MCP_PROTOCOL_VERSION="2025-11-25",
        **auth(secret),
    )


def test_a_connected_app_missing_a_scope_gets_the_scope_challenge(client):
    workspace = WorkspaceFactory(name="Acme")
    browser = Client()
    browser.force_login(owner_of(workspace))
    token = connect(Client(), browser, workspace, scopes=("pages:read",))
    answer = _call(client, token["access_token"], "create_page", {"title": "x", "slug": "x"})
    assert answer.status_code == 403
    challenge = answer["WWW-Authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="pages:read pages:write"' in challenge  # what it holds and what it needs
    assert 'resource_metadata="http://testserver/.well-known/oauth-protected-resource/mcp"' in (
        challenge
    )
    assert answer.json()["error"] == "insufficient-scope"
    # A tool it may call runs as before.
    assert _call(client, token["access_token"], "list_pages").status_code == 200


def test_a_pasted_key_missing_a_scope_keeps_the_tool_error(client):
    created = make_key(scopes=["pages:read"])
    answer = _call(client, created.secret, "create_page", {"title": "x", "slug": "x"})
    assert answer.status_code == 200
    result = answer.json()["result"]
    assert result["isError"] is True
    assert "insufficient-scope" in result["content"][0]["text"]


def test_a_mistyped_key_says_why_in_the_challenge_too(client):
    answer = client.get("/api/v1/workspace", HTTP_AUTHORIZATION="Bearer gwk_not_a_real_key")
    assert answer.status_code == 401
    assert answer.json()["error"] == "invalid-key"
    assert 'error_description="' in answer["WWW-Authenticate"]
    mcp = _call(client, "gwk_not_a_real_key", "get_workspace")
    assert mcp.status_code == 401
    assert 'error_description="' in mcp["WWW-Authenticate"]
    assert 'resource_metadata="' in mcp["WWW-Authenticate"]


def test_an_unsupported_grant_type_says_which_are(client):
    answer = client.post("/oauth/token", {"grant_type": "client_credentials", "client_id": "x"})
    assert answer.status_code == 400
    assert answer.json()["error"] == "unsupported_grant_type"
    assert "client_credentials" in answer.json()["error_description"]
    assert "authorization_code" in answer.json()["error_description"]


@pytest.mark.parametrize(
    "uri",
    ["com.httpie.desktop:/oauth/cb", "vscode://vscode.github-authentication/did-authenticate"],
)
def test_an_app_scheme_that_only_spells_http_inside_a_word_is_still_an_app_scheme(client, uri):
    answer = _register(client, {"client_name": "X", "redirect_uris": [uri]})
    assert answer.status_code == 201, answer.content
