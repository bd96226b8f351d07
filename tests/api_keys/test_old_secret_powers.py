"""An old secret in its grace (a roll's or a hand-over's) serves its integration only: it
reads and calls operations as the key does, but never manages keys (docs/product.md §2)."""

from datetime import timedelta

import pytest

from apps.api.scopes import EVERY_SCOPE
from apps.api_keys.models import ApiKey
from apps.api_keys.rolling import api_key_roll
from apps.audit.services import Actor
from apps.service_accounts.handover import key_hand_over
from apps.service_accounts.services import service_account_create
from tests.conftest import auth
from tests.factories import make_key

pytestmark = pytest.mark.django_db
HOUR = timedelta(hours=1)
NEW_KEY = {"name": "Made by an old secret", "scopes": ["pages:read"], "expiresInDays": 30}


def refused_as_old_secret(answer) -> bool:
    body = answer.json()
    return (
        answer.status_code == 403
        and body["error"] == "insufficient-scope"
        and "old secret" in body["message"]
    )


def test_a_rolled_key_s_old_secret_reads_but_cannot_mint_roll_or_change_policy(client, owner):
    made = make_key(user=owner, scopes=EVERY_SCOPE, name="Owner's automation")
    rolled = api_key_roll(key=made.key, grace=HOUR, actor=Actor.of_user(owner))
    old, key_id = made.secret, made.key.pk

    assert client.get("/api/v1/workspace", **auth(old)).status_code == 200
    assert client.get("/api/v1/keys", **auth(old)).status_code == 200
    for method, path, body in [
        ("post", "/api/v1/keys", NEW_KEY),
        ("post", f"/api/v1/keys/{key_id}/roll", {"gracePeriod": "none"}),
        ("patch", "/api/v1/workspace/policy", {"idleDays": 90}),
        ("post", "/api/v1/service-accounts", {"name": "Escape hatch"}),
    ]:
        answer = getattr(client, method)(path, body, content_type="application/json", **auth(old))
        assert refused_as_old_secret(answer), (path, answer.json())

    assert ApiKey.objects.filter(name="Made by an old secret").count() == 0
    assert ApiKey.objects.get(pk=key_id).secret_hash == rolled.key.secret_hash
    # The current secret still manages keys.
    answer = client.post(
        "/api/v1/keys", NEW_KEY, content_type="application/json", **auth(rolled.secret)
    )
    assert answer.status_code == 201, answer.json()


def test_a_handed_over_key_s_old_secret_cannot_take_the_service_account_s_power(
    client, owner, admin, workspace
):
    account = service_account_create(
        workspace=workspace, name="CI deploy", actor=Actor.of_user(owner)
    )
    leaving = make_key(user=admin, scopes=["pages:read", "keys:read", "keys:write"], name="Hook")
    new = key_hand_over(key=leaving.key, account=account, grace=HOUR, actor=Actor.of_user(owner))

    answer = client.get("/api/v1/workspace", **auth(leaving.secret))
    assert (answer.status_code, answer.json()["userEmail"]) == (200, account.user.email)
    minted = client.post(
        "/api/v1/keys", NEW_KEY, content_type="application/json", **auth(leaving.secret)
    )
    assert refused_as_old_secret(minted), minted.json()
    rolled = client.post(
        f"/api/v1/keys/{new.key.pk}/roll",
        {"gracePeriod": "none"},
        content_type="application/json",
        **auth(leaving.secret),
    )
    assert refused_as_old_secret(rolled), rolled.json()
    # The owner's copy of the new secret goes on working; nothing was made.
    assert client.get("/api/v1/workspace", **auth(new.secret)).status_code == 200
    assert ApiKey.objects.filter(user=account.user).count() == 1


def test_mcp_lists_no_key_managing_tool_to_an_old_secret(client, owner):
    made = make_key(user=owner, scopes=EVERY_SCOPE)
    rolled = api_key_roll(key=made.key, grace=HOUR, actor=Actor.of_user(owner))

    def tools(secret: str) -> set[str]:
        answer = client.post(
            "/mcp",
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            content_type="application/json",
            HTTP_ACCEPT="application/json, text/event-stream",
            HTTP_MCP_PROTOCOL_VERSION="2025-06-18",
            **auth(secret),
        )
        return {tool["name"] for tool in answer.json()["result"]["tools"]}

    current, old = tools(rolled.secret), tools(made.secret)
    assert {"list_keys", "revoke_key"} <= current
    assert "list_keys" in old and "revoke_key" not in old
