"""A JSON-RPC method and a tool's arguments are the caller's to choose: an MCP request naming a
method the server does not know (5,000 characters, a NUL byte, markup) is counted and logged
under a bounded name, an argument logged as the request's object is clipped and made text
PostgreSQL takes, and neither ever costs the batch it is written in, other keys' included."""

import json

import httpx
import pytest
from django.db.models import Sum

from apps.metering.buffer import usage_flush
from apps.request_log.models import RequestLogEntry
from apps.usage.models import KeyUsageHour
from tests.factories import make_key

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE = ["A" * 5000, "mcp:</span><script>alert(1)</script>\u0000\n", "tools/list\u0000", ["x"]]


def test_unknown_methods_are_logged_bounded_and_the_batch_with_them_is_kept(live_server, settings):
    settings.USAGE_FLUSH_SECONDS = 3600  # gathered in memory; the test flushes
    caller = make_key(scopes=["pages:read", "communities:read"])
    bystander = make_key(scopes=["pages:read"])
    mcp = {
        "Authorization": f"Bearer {caller.secret}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    for n, method in enumerate(HOSTILE):
        answer = httpx.post(
            f"{live_server.url}/mcp",
            json={"jsonrpc": "2.0", "id": n, "method": method, "params": {}},
            headers=mcp,
        )
        assert answer.status_code < 500
    # A tool's argument becomes the logged object id before it is found invalid.
    for n, community in enumerate(["\ud800", "\u0000", "7" * 5000]):
        call = {"name": "list_posts", "arguments": {"communityId": community}}
        message = {"jsonrpc": "2.0", "id": 20 + n, "method": "tools/call", "params": call}
        body = json.dumps(message).encode()  # "\ud800" escaped, as JSON may carry it
        answer = httpx.post(f"{live_server.url}/mcp", content=body, headers=mcp)
        assert answer.status_code == 200
    listed = {"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}}
    assert httpx.post(f"{live_server.url}/mcp", json=listed, headers=mcp).status_code == 200
    bystander_call = httpx.get(
        f"{live_server.url}/api/v1/workspace",
        headers={"Authorization": f"Bearer {bystander.secret}"},
    )
    assert bystander_call.status_code == 200

    usage_flush()
    logged = list(
        RequestLogEntry.objects.filter(key_id=caller.key.pk).values_list("operation", flat=True)
    )
    # The door is a column of the log; a method that is not a string is no JSON-RPC message.
    assert sorted(logged) == ["list_posts"] * 3 + ["mcp", "tools/list"] + ["unknown-method"] * 3
    counted = dict(
        KeyUsageHour.objects.filter(key_id=caller.key.pk)
        .values_list("operation")
        .annotate(total=Sum("count"))
    )
    assert counted == {
        "mcp:unknown-method": 3,
        "mcp:tools/list": 1,
        "mcp": 1,
        "mcp:list_posts": 3,
    }
    objects = RequestLogEntry.objects.filter(key_id=caller.key.pk, operation="list_posts")
    assert sorted(objects.values_list("object_id", flat=True)) == ["", "7" * 40, "?"]
    assert RequestLogEntry.objects.filter(key_id=bystander.key.pk).count() == 1
    assert KeyUsageHour.objects.filter(key_id=bystander.key.pk).exists()
