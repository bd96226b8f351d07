"""The request log, black-box: calls through the API and MCP, then the key's requests read back
through the API, the CLI (a subprocess) and MCP, each with the Request-Id its answer carried;
the query string and secrets never stored; another workspace gets 404."""

import json
import logging

import httpx
import pytest

from apps.api.scopes import EVERY_SCOPE
from apps.api_keys.models import ApiKey
from apps.request_log.models import RequestLogEntry
from tests.cli.test_cli import env, run  # noqa: F401 - the fixture
from tests.factories import WorkspaceFactory, make_key, owner_of

pytestmark = pytest.mark.django_db(transaction=True)

MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def mcp(url: str, secret: str, tool: str, arguments: dict) -> httpx.Response:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    call["params"] = {"name": tool, "arguments": arguments}
    return httpx.post(
        f"{url}/mcp", json=call, headers={**MCP_HEADERS, "Authorization": f"Bearer {secret}"}
    )


def test_every_call_is_logged_with_the_request_id_its_answer_carried(live_server, caplog):
    caplog.set_level(logging.DEBUG)
    owner = owner_of(WorkspaceFactory(name="Acme"), email="owner@acme.test")
    worker = make_key(
        user=owner, scopes=["pages:read", "pages:write", "communities:read"], name="Worker"
    )
    manager = make_key(user=owner, scopes=EVERY_SCOPE, name="Manager")
    url = live_server.url
    headers = {"Authorization": f"Bearer {worker.secret}", "User-Agent": "sync-bot/1.0"}

    answers = [
        httpx.get(f"{url}/api/v1/workspace?secret=hunter2&page=1", headers=headers),
        httpx.post(
            f"{url}/api/v1/pages", json={"title": "Hi", "slug": "hi", "body": ""}, headers=headers
        ),
        httpx.get(f"{url}/api/v1/products", headers=headers),  # 403: no products scope
        httpx.get(f"{url}/api/v1/communities/999999/posts", headers=headers),  # 404
        mcp(url, worker.secret, "get_workspace", {}),
    ]
    assert [a.status_code for a in answers] == [200, 201, 403, 404, 200]
    ids = [a.headers["Request-Id"] for a in answers]
    assert all(i.startswith("req_") and len(i) == 28 for i in ids) and len(set(ids)) == 5
    created_page = answers[1].json()["id"]

    listed = httpx.get(
        f"{url}/api/v1/keys/{worker.key.pk}/requests",
        headers={"Authorization": f"Bearer {manager.secret}"},
    )
    assert listed.status_code == 200
    data = listed.json()["data"]
    assert [r["requestId"] for r in data] == ids[::-1]  # newest first
    newest, *_rest, oldest = data
    assert newest["door"] == "mcp" and newest["operation"] == "get_workspace"
    assert oldest["path"] == "/api/v1/workspace"  # never the query string
    assert oldest["userAgent"] == "sync-bot/1.0" and oldest["clientIp"] == "127.0.0.1"
    assert [r["status"] for r in data] == [200, 404, 403, 201, 200]
    assert [r["error"] for r in data] == [None, "not-found", "insufficient-scope", None, None]
    assert all(isinstance(r["durationMs"], float) for r in data)
    assert RequestLogEntry.objects.get(request_id=ids[1]).object_id == str(created_page)

    refused = httpx.get(
        f"{url}/api/v1/keys/{worker.key.pk}/requests?status=4xx",
        headers={"Authorization": f"Bearer {manager.secret}"},
    ).json()["data"]
    assert [r["status"] for r in refused] == [404, 403]
    # The manager's own call is logged too, under the manager's key.
    assert RequestLogEntry.objects.filter(key_id=manager.key.pk).count() == 2

    # No secret anywhere: not in a stored row, not in a log line.
    stored = json.dumps(list(RequestLogEntry.objects.values()), default=str)
    for secret in (worker.secret, manager.secret, "hunter2"):
        assert secret not in stored
        assert secret not in caplog.text


def test_another_workspaces_key_gets_404_and_a_revoked_keys_refusals_are_logged(live_server):
    owner = owner_of(WorkspaceFactory(name="Acme"))
    worker = make_key(user=owner, scopes=["pages:read"])
    stranger = make_key(user=owner_of(WorkspaceFactory(name="Globex")), scopes=EVERY_SCOPE)
    url = live_server.url
    answer = httpx.get(
        f"{url}/api/v1/keys/{worker.key.pk}/requests",
        headers={"Authorization": f"Bearer {stranger.secret}"},
    )
    assert answer.status_code == 404
    ApiKey.objects.filter(pk=worker.key.pk).update(revoked_at=worker.key.created_at)
    gone = httpx.get(
        f"{url}/api/v1/workspace", headers={"Authorization": f"Bearer {worker.secret}"}
    )
    assert gone.status_code == 401 and gone.headers["Request-Id"].startswith("req_")
    entry = RequestLogEntry.objects.get(key_id=worker.key.pk)
    assert (entry.status, entry.error, entry.request_id) == (
        401,
        "revoked-key",
        gone.headers["Request-Id"],
    )
    # A key this server does not know leaves no row, but its answer still has an id.
    unknown = httpx.get(f"{url}/api/v1/workspace", headers={"Authorization": "Bearer gwk_x"})
    assert unknown.headers["Request-Id"].startswith("req_")
    assert RequestLogEntry.objects.count() == 2  # the stranger's 404 and the revoked key's 401


def test_the_cli_and_mcp_read_the_same_log(live_server, env):  # noqa: F811
    owner = owner_of(WorkspaceFactory(name="Acme"))
    worker = make_key(user=owner, scopes=["pages:read"])
    manager = make_key(user=owner, scopes=EVERY_SCOPE)
    url = live_server.url
    ok = httpx.get(f"{url}/api/v1/workspace", headers={"Authorization": f"Bearer {worker.secret}"})
    refused = httpx.get(
        f"{url}/api/v1/products", headers={"Authorization": f"Bearer {worker.secret}"}
    )
    env.update(GATEHOUSE_API_KEY=manager.secret, GATEHOUSE_URL=url)

    result = run(
        env, "--json", "keys", "requests", str(worker.key.pk), "--status", "4xx", "--since", "2h"
    )
    assert result.returncode == 0, result.stderr
    assert [r["requestId"] for r in json.loads(result.stdout)["data"]] == [
        refused.headers["Request-Id"]
    ]
    table = run(env, "keys", "requests", str(worker.key.pk))
    assert table.returncode == 0, table.stderr
    assert ok.headers["Request-Id"] in table.stdout and "403" in table.stdout
    bad = run(env, "keys", "requests", str(worker.key.pk), "--since", "yesterday")
    assert bad.returncode != 0 and "since must be a date-time" in bad.stderr

    answer = mcp(url, manager.secret, "list_key_requests", {"keyId": worker.key.pk})
    result = answer.json()["result"]["structuredContent"]
    assert [r["requestId"] for r in result["data"]] == [
        refused.headers["Request-Id"],
        ok.headers["Request-Id"],
    ]


def test_an_mcp_tool_refusal_is_recorded_as_the_api_answers_it(live_server):
    """docs/product.md §11, one vocabulary across doors: the tool's own name, and for a tool
    error the API's status and code, so filters and refusal counts see MCP refusals too."""
    from apps.metering.refusals import refusals_last_day
    from apps.usage.models import KeyUsageHour

    owner = owner_of(WorkspaceFactory(name="Acme"))
    worker = make_key(user=owner, scopes=["pages:read"], name="Worker")
    manager = make_key(user=owner, scopes=EVERY_SCOPE, name="Manager")
    url = live_server.url
    answers = [
        mcp(url, worker.secret, "list_products", {}),  # 403: no products scope
        mcp(url, worker.secret, "create_page", {"title": "x"}),  # 403: no pages:write
        mcp(url, worker.secret, "list_pages", {"limit": 0}),  # 400: out of range
        mcp(url, worker.secret, "no_such_tool", {}),  # 404
        mcp(url, worker.secret, "list_pages", {}),
    ]
    assert [a.status_code for a in answers] == [200] * 5  # JSON-RPC answers, tool errors inside
    data = httpx.get(
        f"{url}/api/v1/keys/{worker.key.pk}/requests",
        headers={"Authorization": f"Bearer {manager.secret}"},
    ).json()["data"][::-1]
    assert [(r["operation"], r["status"], r["error"]) for r in data] == [
        ("list_products", 403, "insufficient-scope"),
        ("create_page", 403, "insufficient-scope"),
        ("list_pages", 400, "invalid-input"),
        ("tools/call", 404, "not-found"),
        ("list_pages", 200, None),
    ]
    assert {r["door"] for r in data} == {"mcp"}
    refused = httpx.get(
        f"{url}/api/v1/keys/{worker.key.pk}/requests?status=403",
        headers={"Authorization": f"Bearer {manager.secret}"},
    ).json()["data"]
    assert len(refused) == 2
    assert refusals_last_day(worker.key.pk) == {"insufficient-scope": 2}
    counted = set(
        KeyUsageHour.objects.filter(key_id=worker.key.pk).values_list("operation", "outcome")
    )
    assert ("mcp:list_products", "403") in counted and ("mcp:list_pages", "2xx") in counted
