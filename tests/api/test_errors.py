"""Every row of the API's error table, with its headers and the order of the checks."""

import json
import logging
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from apps.api_keys import tokens
from apps.api_keys.services import api_key_revoke
from apps.audit.services import Actor
from tests.client import Client
from tests.conftest import auth
from tests.factories import make_key

OPERATOR = Actor.of_operator("test")

pytestmark = pytest.mark.django_db
URL = "/api/v1/workspace"
CHALLENGE = 'Bearer realm="api"'
INVALID_TOKEN = 'Bearer realm="api", error="invalid_token", error_description="'


def invalid_token_challenge(response) -> str:
    """The RFC 6750 challenge of a refused key, with the body's message as error_description
    (what a client that shows only the challenge tells its user); returns the description."""
    challenge = response["WWW-Authenticate"]
    assert challenge.startswith(INVALID_TOKEN) and challenge.endswith('"'), challenge
    description = challenge.removeprefix(INVALID_TOKEN).removesuffix('"')
    assert description and '"' not in description
    assert description == response.json()["message"].replace("’", "'")
    return description


def error_of(response) -> str:
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"error", "message"}
    assert body["message"]
    return body["error"]


def patch(client, secret, body, content_type="application/json", **extra):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return client.patch(URL, data, content_type=content_type, **auth(secret), **extra)


@pytest.mark.parametrize(
    "header",
    [None, "Basic dXNlcjpwYXNz", "Bearer", "Bearer   ", "Token abc", ""],
)
def test_no_bearer_credential_is_missing_key(client, header):
    extra = {} if header is None else {"HTTP_AUTHORIZATION": header}
    response = client.get(URL, **extra)
    assert response.status_code == 401
    assert error_of(response) == "missing-key"
    assert response["WWW-Authenticate"] == CHALLENGE


@pytest.mark.parametrize(
    "credential",
    [
        "not-a-key",
        "gwk_" + "a" * 38,  # well-formed but the checksum fails
        # checksum fine, unknown to the database; a fixed id, so xdist workers agree
        pytest.param(tokens.generate_secret("workspace"), id="well-formed-but-unknown"),
        "gwk_abc def",
        "gwk_ünïcödé" + "a" * 30,
    ],
)
def test_bad_credential_is_invalid_key(client, credential):
    response = client.get(URL, HTTP_AUTHORIZATION=f"Bearer {credential}")
    assert response.status_code == 401
    assert error_of(response) == "invalid-key"
    invalid_token_challenge(response)


def test_expired_key(client):
    created = make_key(expires_in=timedelta(days=7))
    with time_machine.travel(created.key.expires_at, tick=False):
        response = client.get(URL, **auth(created.secret))
    assert response.status_code == 401
    assert error_of(response) == "expired-key"
    invalid_token_challenge(response)


def test_revoked_key_fails_on_the_next_request(client, key):
    assert client.get(URL, **auth(key.secret)).status_code == 200
    api_key_revoke(key=key.key, actor=OPERATOR)
    response = client.get(URL, **auth(key.secret))
    assert response.status_code == 401
    assert error_of(response) == "revoked-key"
    invalid_token_challenge(response)


def test_scheme_name_is_case_insensitive(client, key):
    assert client.get(URL, HTTP_AUTHORIZATION=f"bearer {key.secret}").status_code == 200
    assert client.get(URL, HTTP_AUTHORIZATION=f"BEARER {key.secret}").status_code == 200


def test_insufficient_scope_names_the_scope(client):
    created = make_key(scopes=["pages:read"])
    response = client.get("/api/v1/products", **auth(created.secret))
    assert response.status_code == 403
    assert error_of(response) == "insufficient-scope"
    assert response["WWW-Authenticate"] == (
        'Bearer realm="api", error="insufficient_scope", scope="products:read"'
    )


def test_patch_without_write_scope_lists_every_write_scope(client):
    created = make_key(scopes=["products:read", "pages:read"])
    response = patch(client, created.secret, {"timezone": "UTC"})
    assert response.status_code == 403
    assert error_of(response) == "insufficient-scope"
    assert response["WWW-Authenticate"].endswith(
        'scope="communities:write pages:write products:write"'
    )


def test_invalid_input(client, key):
    response = patch(client, key.secret, {"videoSettings": {"quality": "1080p"}})
    assert response.status_code == 400
    assert error_of(response) == "invalid-input"
    assert "only in the dashboard" in response.json()["message"]


def test_payload_too_large(client, key, settings):
    settings.API_MAX_BODY_BYTES = 100
    response = patch(client, key.secret, {"workspaceName": "x" * 200})
    assert response.status_code == 413
    assert error_of(response) == "payload-too-large"


def test_default_body_limit_is_64_kib(client, key):
    body = json.dumps({"workspaceName": "x" * 65_536})
    assert patch(client, key.secret, body).status_code == 413


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", ""])
def test_body_without_json_content_type_is_unsupported(client, key, content_type):
    response = patch(client, key.secret, '{"timezone": "UTC"}', content_type=content_type)
    assert response.status_code == 415
    assert error_of(response) == "unsupported-media-type"


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=utf-8", "Application/JSON", "application/json;"]
)
def test_json_content_type_matches_loosely(client, key, content_type):
    response = patch(client, key.secret, '{"timezone": "UTC"}', content_type=content_type)
    assert response.status_code == 200


@pytest.mark.parametrize("path", ["/api/v1/nothing", "/api/v2/workspace", "/api/", "/api/v1/"])
def test_unknown_path_is_not_found_as_json(client, key, path):
    for extra in ({}, auth(key.secret)):
        response = client.get(path, **extra)
        assert response.status_code == 404
        assert error_of(response) == "not-found"


def test_wrong_method_is_refused_with_allow_before_authentication(client):
    response = client.delete(URL)
    assert response.status_code == 405
    assert error_of(response) == "method-not-allowed"
    assert response["Allow"] == "GET, PATCH"
    assert client.put("/api/v1/products")["Allow"] == "GET, POST"


def test_unexpected_error_is_internal_error_json_without_the_secret(key, monkeypatch, caplog):
    def explode(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("apps.workspaces.operations.workspace_to_json", explode)
    client = Client(raise_request_exception=False)
    with caplog.at_level(logging.DEBUG):
        response = client.get(URL, **auth(key.secret))
    assert response.status_code == 500
    assert error_of(response) == "internal-error"
    assert "boom" not in response.content.decode()
    assert "RuntimeError" in caplog.text
    assert key.secret not in caplog.text


def test_secret_never_reaches_logs_or_messages(client, key, caplog):
    with caplog.at_level(logging.DEBUG):
        responses = [
            client.get(URL, **auth(key.secret)),
            patch(client, key.secret, {"nope": 1}),
            patch(client, key.secret, "not json"),
            client.get("/api/v1/missing", **auth(key.secret)),
        ]
        api_key_revoke(key=key.key, actor=OPERATOR)
        responses.append(client.get(URL, **auth(key.secret)))
    assert key.secret not in caplog.text
    for response in responses:
        assert key.secret not in response.content.decode()


def test_routing_comes_before_authentication_and_scope_before_body(client):
    read_only = make_key(scopes=["products:read"])
    assert client.post(URL, **auth("garbage")).status_code == 405
    assert client.get("/api/v1/nowhere", **auth("garbage")).status_code == 404
    assert patch(client, "garbage", "not json").status_code == 401
    assert patch(client, read_only.secret, "not json", content_type="text/plain").status_code == 403


def test_every_api_answer_is_json_even_for_a_bad_host(client):
    response = client.get(URL, HTTP_HOST="evil.example")
    assert response.status_code == 400
    assert error_of(response) == "invalid-input"


def test_api_answers_are_not_cached(client, key):
    assert client.get(URL, **auth(key.secret))["Cache-Control"] == "no-store"
    assert client.get(URL)["Cache-Control"] == "no-store"


def test_expiry_time_is_checked_per_request_not_cached(client):
    created = make_key(expires_in=timedelta(minutes=5))
    assert client.get(URL, **auth(created.secret)).status_code == 200
    with time_machine.travel(timezone.now() + timedelta(minutes=5, seconds=1)):
        assert client.get(URL, **auth(created.secret)).status_code == 401


def test_the_api_never_accepts_a_session_and_never_sets_a_cookie(client):
    created = make_key()
    client.force_login(created.key.user)
    response = client.get(URL)
    assert response.status_code == 401 and error_of(response) == "missing-key"
    assert not response.cookies and "Cookie" not in response.get("Vary", "")
    answered = client.get(URL, **auth(created.secret))
    assert answered.status_code == 200 and not answered.cookies
    assert answered["X-Content-Type-Options"] == "nosniff"


def test_plain_http_is_refused_with_json_not_redirected_in_production(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    created = make_key()
    refused = client.get(URL, **auth(created.secret))
    assert refused.status_code == 403
    assert error_of(refused) == "https-required"
    assert "treat it as exposed" in refused.json()["message"]
    mcp = client.post("/mcp", "{}", content_type="application/json", **auth(created.secret))
    assert mcp.status_code == 403 and error_of(mcp) == "https-required"
    assert client.get(URL, secure=True, **auth(created.secret)).status_code == 200
    assert client.get("/sign-in/").status_code == 301  # the dashboard still redirects


def test_api_mcp_and_oauth_answers_carry_a_csp_and_coop(client):
    """A JSON answer opened as a page can load, run and frame nothing (issue 42 item 15)."""
    created = make_key()
    answers = {
        "api": client.get(URL, **auth(created.secret)),
        "api 401": client.get(URL),
        "api 404": client.get("/api/v1/nothing-here"),
        "mcp": client.post(
            "/mcp",
            '{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}',
            content_type="application/json",
            HTTP_ACCEPT="application/json, text/event-stream",
            **auth(created.secret),
        ),
        "oauth token": client.post("/oauth/token", {"grant_type": "nothing"}),
        "oauth metadata": client.get("/.well-known/oauth-authorization-server"),
    }
    for door, answer in answers.items():
        policy = answer.get("Content-Security-Policy", "")
        assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy, door
        assert answer.get("Cross-Origin-Opener-Policy") == "same-origin", door


def test_api_and_mcp_answers_carry_hsts_and_referrer_policy_in_production(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_HSTS_PRELOAD = True
    created = make_key()
    tools_list = '{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}'
    answers = [
        client.get(URL, secure=True, **auth(created.secret)),
        client.get(URL, secure=True),  # a 401 too
        client.post(
            "/mcp",
            tools_list,
            content_type="application/json",
            secure=True,
            HTTP_ACCEPT="application/json, text/event-stream",
            **auth(created.secret),
        ),
    ]
    for answer in answers:
        assert answer["Strict-Transport-Security"] == (
            "max-age=31536000; includeSubDomains; preload"
        )
        assert answer["Referrer-Policy"] == "same-origin"


def test_refusals_are_logged_with_reason_hint_address_and_path_never_the_secret(client, caplog):
    created = make_key(scopes=["pages:read"])
    revoked = make_key(user=created.key.user)
    api_key_revoke(key=revoked.key, actor=Actor.of_operator("test"))
    caplog.set_level("WARNING")
    client.get(URL, **auth(revoked.secret))
    client.get("/api/v1/products", **auth(created.secret))
    client.get(URL, **auth("gwk_nonsense"))
    client.get(URL)
    lines = [r.getMessage() for r in caplog.records]
    refusals = [line for line in lines if line.startswith("API request refused")]
    assert len(refusals) == 4
    assert (
        f"reason=revoked-key status=401 key_id={revoked.key.pk} key_hint={revoked.key.hint}"
        in (refusals[0])
    )
    assert "ip=127.0.0.1 method=GET path=/api/v1/workspace" in refusals[0]
    assert f"reason=insufficient-scope status=403 key_id={created.key.pk}" in refusals[1]
    assert "reason=invalid-key" in refusals[2] and "reason=missing-key" in refusals[3]
    assert not any(
        line.startswith("Unauthorized:") or line.startswith("Forbidden:") for line in lines
    )
    text = "\n".join(lines)
    assert revoked.secret not in text and created.secret not in text


def test_refusals_are_counted_per_key_and_shown_on_its_page(client):
    from tests.factories import owner_of

    owner = owner_of()
    created = make_key(user=owner, scopes=["pages:read"])
    for _ in range(3):
        client.get("/api/v1/products", **auth(created.secret))
    api_key_revoke(key=created.key, actor=Actor.of_operator("test"))
    client.get(URL, **auth(created.secret))
    client.force_login(owner)
    page = client.get(f"/integrations/api/keys/{created.key.pk}/").content.decode()
    refusals = page.split('data-testid="refusals">', 1)[1].split("</dd>", 1)[0]
    assert '3 × <span class="mono">insufficient-scope</span>' in refusals
    assert '1 × <span class="mono">revoked-key</span>' in refusals
