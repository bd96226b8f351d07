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
    # "\ud800" in JSON decodes to a lone surrogate: no reply could be written with it.
    body = b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "tools/list"}'
    answer = _mcp(live_server, make_key().secret, body)
    assert answer.status_code == 400, answer.text[:300]
    assert answer.json()["error"]["code"] == -32600


def _mcp(live_server, secret: str, body: bytes) -> httpx2.Response:
    return httpx2.post(
        f"{live_server.url}/mcp",
        content=body,
        headers={
            "Authorization": f"Bearer {secret}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
        },
        timeout=10,
    )


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
        b'"params":{"name":"get_workspace","arguments":{"\\ud800":1}}}',
        b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":false,"method":"ping"}',
    ],
)
def test_mcp_messages_no_reply_could_carry_are_invalid_requests(live_server, body):
    answer = _mcp(live_server, make_key().secret, body)
    assert answer.status_code == 400, answer.text[:300]
    assert answer.json()["error"]["code"] == -32600


@pytest.mark.parametrize("path", ["/keys", "/keys/{id}/narrow"])
def test_an_object_id_past_64_bits_in_restrictions_is_a_400(live_server, path):
    manager = make_key(scopes=["pages:read", "keys:read", "keys:write"])
    answer = httpx2.post(
        f"{live_server.url}/api/v1{path.format(id=manager.key.pk)}",
        json={
            "name": "x",
            "scopes": ["pages:read"],
            "restrictions": {"pages": [2**63]},
        }
        if path == "/keys"
        else {"restrictions": {"pages": [2**63]}},
        headers={"Authorization": f"Bearer {manager.secret}"},
        timeout=10,
    )
    assert (answer.status_code, answer.json()["error"]) == (400, "invalid-input"), answer.text


@pytest.mark.parametrize("path", ["/oauth/authorize", "/settings/", "/integrations/api/"])
def test_a_page_s_query_of_too_many_fields_is_a_400_when_signed_out(live_server, path):
    answer = httpx2.get(f"{live_server.url}{path}?{MANY}", timeout=10)
    assert answer.status_code == 400, answer.text[:300]
    assert "more fields than this server takes" in answer.text


@pytest.mark.parametrize(
    ("path", "kind"), [("/api/v1/keys", "application/json"), ("/settings/", "text/plain")]
)
def test_a_nul_in_the_content_type_is_a_400_at_the_wsgi_door(path, kind, settings):
    import importlib
    from wsgiref.util import setup_testing_defaults

    settings.DEBUG = True  # config.wsgi refuses the tests' placeholder secrets otherwise
    application = importlib.import_module("config.wsgi").application

    environ = {
        "PATH_INFO": path,
        "REQUEST_METHOD": "POST",
        "CONTENT_TYPE": "application/json; charset=\x00",
        "HTTP_HOST": "127.0.0.1",
    }
    setup_testing_defaults(environ)
    answer: dict = {}

    def start_response(status, headers, exc_info=None):
        answer["status"], answer["headers"] = status, dict(headers)

    body = b"".join(application(environ, start_response))
    assert answer["status"].startswith("400")
    assert answer["headers"]["Content-Type"].startswith(kind)
    assert b"NUL" in body
