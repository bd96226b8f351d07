"""The API's answers on the wire, from gunicorn as production serves them: each carries its
length, so that HTTP/1.1 answers are sent whole rather than chunked (one write and packet
fewer a call, and a client knows the size before reading the body); 204 carries none."""

import http.client
import json
from urllib.parse import urlsplit

import pytest

from tests.conftest import auth
from tests.factories import make_key
from tests.operations.live import gunicorn, migrated_with_a_key, server_env


def _exchange(base: str, method: str, path: str, headers: dict[str, str], body: bytes = b""):
    """The status, the raw header lines and the raw body (chunked framing left in place)."""
    where = urlsplit(base)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=10)
    try:
        connection.putrequest(method, path)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            connection.putheader(name, value)
        connection.endheaders(body)
        response = connection.getresponse()
        # Read the socket as it came: http.client would undo the chunking otherwise.
        response.chunked = False
        raw = response.fp.read() if response.fp else b""
        return response.status, {k.lower(): v for k, v in response.getheaders()}, raw
    finally:
        connection.close()


def _assert_sized(status: int, headers: dict[str, str], raw: bytes) -> None:
    assert "transfer-encoding" not in headers, (status, headers)
    assert int(headers["content-length"]) == len(raw), (status, headers, raw)


def test_api_and_mcp_answers_carry_their_length(tmp_path):
    env = server_env(tmp_path)
    secret = migrated_with_a_key(env)
    bearer = {"Authorization": f"Bearer {secret}"}
    with gunicorn(env, tmp_path / "server.log") as (base, _pid):
        status, headers, raw = _exchange(base, "GET", "/api/v1/workspace", bearer)
        assert status == 200 and json.loads(raw)["workspaceName"] == "Ops"
        _assert_sized(status, headers, raw)

        status, headers, raw = _exchange(base, "GET", "/api/v1/workspace", {})
        assert status == 401 and json.loads(raw)["error"] == "missing-key"
        _assert_sized(status, headers, raw)

        call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        status, headers, raw = _exchange(
            base,
            "POST",
            "/mcp",
            {
                **bearer,
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
            json.dumps(call).encode(),
        )
        assert status == 200 and json.loads(raw)["result"]["tools"]
        _assert_sized(status, headers, raw)


@pytest.mark.django_db
def test_a_204_carries_no_length(client):
    owner_key = make_key(scopes=["keys:write"])
    spare = make_key(user=owner_key.key.user, workspace=owner_key.key.workspace).key
    response = client.delete(f"/api/v1/keys/{spare.pk}", **auth(owner_key.secret))
    assert response.status_code == 204 and response.content == b""
    assert not response.has_header("Content-Length")
    answered = client.get("/api/v1/workspace", **auth(owner_key.secret))
    assert answered["Content-Length"] == str(len(answered.content))
