"""Requests Django itself finds suspicious are a 400 at every door, before any key is read,
never a 500 that pages the on-call (issue 49): too many query fields, a Host not served, and a
JSON-RPC id that is no text. Black-box, against a live server."""

import httpx2
import pytest

from tests.factories import make_key

pytestmark = pytest.mark.django_db(transaction=True)
MANY = "&".join(f"f{n}=1" for n in range(1200))


@pytest.mark.parametrize(
    ("method", "path", "error"),
    [
        ("GET", "/api/v1/workspace", "invalid-input"),
        ("GET", "/api/v1/keys/1", "invalid-input"),
        ("POST", "/mcp", None),
        ("POST", "/oauth/token", "invalid_request"),
        ("POST", "/oauth/register", "invalid_request"),
        ("GET", "/.well-known/oauth-authorization-server", "invalid_request"),
    ],
)
def test_a_query_string_of_too_many_fields_is_a_400_without_a_key(live_server, method, path, error):
    answer = httpx2.request(method, f"{live_server.url}{path}?{MANY}", timeout=10)
    assert answer.status_code == 400, answer.text[:300]
    body = answer.json()
    if error is not None:
        assert body["error"] == error
        assert "too many fields" in (body.get("message") or body.get("error_description"))


def test_a_query_string_of_too_many_fields_is_a_400_with_a_good_key_too(live_server):
    created = make_key()
    answer = httpx2.get(
        f"{live_server.url}/api/v1/workspace?{MANY}",
        headers={"Authorization": f"Bearer {created.secret}"},
        timeout=10,
    )
    assert (answer.status_code, answer.json()["error"]) == (400, "invalid-input")


def test_a_jsonrpc_id_that_is_not_text_is_an_invalid_request(live_server):
    created = make_key()
    # "\ud800" in JSON decodes to a lone surrogate: no reply could be written with it.
    body = b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "tools/list"}'
    answer = httpx2.post(
        f"{live_server.url}/mcp",
        content=body,
        headers={
            "Authorization": f"Bearer {created.secret}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        },
        timeout=10,
    )
    assert answer.status_code == 400, answer.text[:300]
    assert answer.json()["error"]["code"] == -32600
