"""Driving the authorization code flow by hand over HTTP (Django's test client), for the tests
that look at one step at a time. The whole flow is also run by the MCP SDK's own client
(test_mcp_sdk_client.py)."""

import base64
import hashlib
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

REDIRECT = "http://127.0.0.1:33418/callback"
RESOURCE = "http://testserver/mcp"


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def register(client, **fields) -> dict:
    body = {
        "client_name": "Test Assistant",
        "redirect_uris": [REDIRECT],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    body.update(fields)
    response = client.post("/oauth/register", body, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()


def authorize_url(client_id: str, challenge: str, **overrides) -> str:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "state": "st4te",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": RESOURCE,
        "scope": "products:read pages:read pages:write",
    }
    params.update(overrides)
    return "/oauth/authorize?" + urlencode({k: v for k, v in params.items() if v is not None})


def redirect_params(response) -> dict[str, str]:
    """The query of an answer sent back to the app, which always names this server (RFC 9207)."""
    assert response.status_code == 302, response.content[:500]
    location = response["Location"]
    assert location.startswith(REDIRECT.rsplit(":", 1)[0])
    params = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
    assert params["iss"] == "http://testserver"
    return params


def approve(browser, url: str, workspace, scopes=("products:read", "pages:read"), **extra):
    data = {"decision": "approve", "workspace": str(workspace.pk), "scopes": list(scopes)}
    data.update(extra)
    return browser.post(url, data)


def exchange(client, client_id: str, code: str, verifier: str, **overrides):
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": client_id,
        "code_verifier": verifier,
        "resource": RESOURCE,
    }
    data.update(overrides)
    return client.post("/oauth/token", {k: v for k, v in data.items() if v is not None})


def refresh(client, client_id: str, refresh_token: str, **overrides):
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id}
    data.update(overrides)
    return client.post("/oauth/token", data)


def connect(client, browser, workspace, scopes=("products:read", "pages:read")) -> dict:
    """Register, approve and exchange: the token answer, with the client_id beside it."""
    client_id = register(client)["client_id"]
    verifier, challenge = pkce()
    code = redirect_params(
        approve(browser, authorize_url(client_id, challenge), workspace, scopes)
    )["code"]
    answer = exchange(client, client_id, code, verifier)
    assert answer.status_code == 200, answer.content
    return {**answer.json(), "client_id": client_id}
