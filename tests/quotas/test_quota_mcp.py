"""A quota at the MCP door: a tools/call counts as its API operation, MCP's own methods never,
and get_key shows the period's use."""

import httpx
import pytest

from apps.common.quota_periods import Quota
from tests.factories import make_key, owner_of

pytestmark = pytest.mark.django_db(transaction=True)


def mcp(live_server, secret: str, method: str, params: dict | None = None) -> httpx.Response:
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    headers = {
        "Authorization": f"Bearer {secret}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    return httpx.post(f"{live_server.url}/mcp", json=message, headers=headers, timeout=10)


def test_tools_calls_spend_the_quota_mcps_own_methods_do_not_and_get_key_shows_it(live_server):
    owner = owner_of()
    made = make_key(user=owner, scopes=["keys:read"], quota=Quota(3, "day"), name="Agent")
    for _ in range(4):
        assert mcp(live_server, made.secret, "tools/list").status_code == 200
    shown = []
    for _ in range(3):
        answer = mcp(
            live_server, made.secret, "tools/call",
            {"name": "get_key", "arguments": {"keyId": made.key.pk}},
        )  # fmt: skip
        assert answer.status_code == 200, answer.text
        shown.append(answer.json()["result"]["structuredContent"]["quotaUse"])
    assert [use["used"] for use in shown] == [1, 2, 3]  # this call's own unit included
    assert shown[-1]["left"] == 0 and shown[-1]["requests"] == 3
    spent = mcp(live_server, made.secret, "tools/list")
    assert spent.status_code == 429 and spent.json()["error"] == "quota-exceeded"


def test_an_owners_agent_shares_a_quota_with_update_service_account_and_get_key_shows_it(
    live_server,
):
    from apps.api.scopes import EVERY_SCOPE
    from apps.audit.services import Actor
    from apps.service_accounts.services import service_account_create

    owner = owner_of()
    workspace = owner.memberships.get().workspace
    agent = make_key(user=owner, scopes=EVERY_SCOPE, name="Owner's agent")
    account = service_account_create(workspace=workspace, name="Sync", actor=Actor.of_user(owner))
    pooled = make_key(user=account.user, workspace=workspace, scopes=["pages:read"])

    def tool(name: str, arguments: dict) -> dict:
        answer = mcp(
            live_server, agent.secret, "tools/call", {"name": name, "arguments": arguments}
        )
        assert answer.status_code == 200, answer.text
        result = answer.json()["result"]
        assert not result.get("isError"), result
        return result["structuredContent"]

    changed = tool(
        "update_service_account",
        {"serviceAccountId": account.pk, "quotaShared": {"requests": 9, "period": "month"}},
    )
    assert changed["quotaShared"] == {"requests": 9, "period": "month"}
    shown = tool("get_key", {"keyId": pooled.key.pk})
    assert shown["quotaShared"] is True and shown["quotaUse"]["requests"] == 9
