"""The endpoints programs call (token, revocation, registration, device code, discovery) are
answered as the API is: without sessions, CSRF, messages or htmx, and an unexpected error in
OAuth's JSON, never a page."""

import pytest

from apps.oauth import views as oauth_views
from tests.factories import owner_of

pytestmark = pytest.mark.django_db

MACHINE_GETS = [
    "/.well-known/oauth-authorization-server",
    "/.well-known/oauth-protected-resource/mcp",
]
MACHINE_POSTS = ["/oauth/token", "/oauth/revoke", "/oauth/register", "/oauth/device/code"]


def test_machine_endpoints_run_no_browser_middleware_even_for_a_signed_in_browser(client):
    client.force_login(owner_of())
    answers = [client.get(path) for path in MACHINE_GETS]
    answers += [client.post(path, {"client_id": "nobody"}) for path in MACHINE_POSTS]
    for answer in answers:
        request = answer.wsgi_request
        assert not hasattr(request, "session") and not hasattr(request, "user")
        assert not hasattr(request, "htmx")
        assert not answer.cookies and "Cookie" not in answer.get("Vary", "")
        assert answer["X-Content-Type-Options"] == "nosniff"
        assert answer["Content-Type"].startswith("application/json")
    # The consent page is a page: it keeps the browser's middleware.
    assert hasattr(client.get("/oauth/authorize").wsgi_request, "session")


def test_an_unexpected_error_on_a_machine_endpoint_is_oauth_json(client, monkeypatch):
    def broken(request):
        raise RuntimeError("boom")

    monkeypatch.setattr(oauth_views.SERVER, "create_endpoint_response", broken)
    monkeypatch.setattr(oauth_views.SERVER, "create_token_response", broken)
    client.raise_request_exception = False
    answer = client.post("/oauth/revoke", {"client_id": "x", "token": "y"})
    assert answer.status_code == 500
    assert answer.json()["error"] == "server_error"
    assert answer["Content-Type"].startswith("application/json")


def test_a_host_this_server_does_not_serve_is_oauth_json(client):
    answer = client.post("/oauth/token", {"grant_type": "x"}, HTTP_HOST="evil.example")
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_request"
