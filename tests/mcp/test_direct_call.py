"""A plain tools/call of one of our tools is answered in the request's thread (apps/mcp/
direct_call.py), without the SDK's kernel: held here against the SDK's own answers, the kernel's
and its whole transport's, for every protocol version, byte for byte of meaning."""

import httpx2
import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

import apps.mcp.door as door
from apps.products.models import Product
from tests.factories import make_key

pytestmark = pytest.mark.django_db(transaction=True)


def call(name, arguments=None, **params):
    params = {"name": name, **({} if arguments is None else {"arguments": arguments}), **params}
    return {"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": params}


DIRECT = {
    "a record": call("get_workspace", {}),
    "no arguments at all": call("get_workspace"),
    "a list": call("list_products", {"limit": 1}),
    "the key's policy": call("get_key_policy", {}),
    "an empty list": call("list_communities", {}),
    "a field refused": call("create_product", {"name": ""}),
    "an unknown argument": call("get_workspace", {"colour": "blue"}),
    "a scope the key lacks": call("update_workspace", {"name": "Renamed"}),
}
TO_THE_KERNEL = {
    "an unknown tool": call("get_weather", {}),
    "arguments that are no object": call("get_workspace", ["a"]),
    "arguments null": {
        **call("get_workspace"),
        "params": {"name": "get_workspace", "arguments": None},
    },
    "a _meta beside them": call("get_workspace", {}, _meta={"progressToken": "p-1"}),
}


def post(live_server, secret: str, message: dict, version: str) -> httpx2.Response:
    headers = {
        "Authorization": f"Bearer {secret}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": version,
    }
    return httpx2.post(f"{live_server.url}/mcp", json=message, headers=headers, timeout=10)


def answers_three_ways(live_server, monkeypatch, message, version):
    """(answered directly?, direct answer, the kernel's, the transport's)."""
    key = make_key(scopes=["products:read", "products:write"])
    Product.objects.create(workspace=key.key.workspace, name="Direct", price_cents=100)
    direct = door.direct_tool_call
    taken = []
    monkeypatch.setattr(
        door, "direct_tool_call", lambda *a: (answer := direct(*a)) and taken.append(1) or answer
    )
    first = post(live_server, key.secret, message, version)
    monkeypatch.setattr(door, "direct_tool_call", lambda *a: None)
    kernel = post(live_server, key.secret, message, version)
    monkeypatch.setattr(door, "single_exchange_version", lambda request, body: None)
    transport = post(live_server, key.secret, message, version)
    return bool(taken), first, kernel, transport


def same(*responses: httpx2.Response) -> None:
    shapes = {(r.status_code, r.headers["Content-Type"]) for r in responses}
    assert len(shapes) == 1, shapes
    first, *others = (r.json() for r in responses)
    for other in others:
        assert other == first


@pytest.mark.parametrize("version", HANDSHAKE_PROTOCOL_VERSIONS)
@pytest.mark.parametrize("case", DIRECT)
def test_a_plain_tool_call_is_answered_directly_as_the_sdk_would(
    live_server, monkeypatch, case, version
):
    taken, direct, kernel, transport = answers_three_ways(
        live_server, monkeypatch, DIRECT[case], version
    )
    assert taken
    same(direct, kernel, transport)
    assert direct.json()["id"] == 41 and "result" in direct.json()


@pytest.mark.parametrize("version", HANDSHAKE_PROTOCOL_VERSIONS)
@pytest.mark.parametrize("case", TO_THE_KERNEL)
def test_anything_but_a_plain_call_is_left_to_the_sdk(live_server, monkeypatch, case, version):
    taken, first, kernel, transport = answers_three_ways(
        live_server, monkeypatch, TO_THE_KERNEL[case], version
    )
    assert not taken
    same(first, kernel, transport)


@pytest.mark.parametrize("version", HANDSHAKE_PROTOCOL_VERSIONS)
def test_the_answer_is_shaped_for_the_protocol_version(live_server, version):
    """The SDK's shaping is kept: the tool's result says `resultType` (the 2026 protocol's),
    which no version before it may carry on the wire."""
    key = make_key(scopes=["products:read"])
    result = post(live_server, key.secret, call("get_workspace", {}), version).json()["result"]
    assert set(result) == {"content", "structuredContent", "isError"}
    assert result["structuredContent"]["workspaceName"] == key.key.workspace.name
