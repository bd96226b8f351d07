"""MCP through clients nobody here wrote: the MCP Inspector's CLI (the official TypeScript SDK
inside), run with npx against a live server."""

import json
import os
import shutil
import subprocess

import pytest

from tests.factories import make_key

pytestmark = pytest.mark.django_db(transaction=True)
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"


def inspector(live_server, secret: str, *args: str) -> dict:
    if shutil.which("npx") is None:
        if os.environ.get("GATEHOUSE_REQUIRE_BROWSER"):
            pytest.fail("npx is missing: the MCP Inspector test needs Node.js")
        pytest.skip("npx is missing")
    result = subprocess.run(
        [
            "npx",
            "-y",
            INSPECTOR,
            "--cli",
            f"{live_server.url}/mcp",
            "--transport",
            "http",
            "--header",
            f"Authorization: Bearer {secret}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert "Structured content does not match" not in result.stdout + result.stderr
    answer = json.loads(result.stdout)  # a tool error exits non-zero (5), with its JSON
    ok = result.returncode == 0 or answer.get("isError") is True
    assert ok, f"exit {result.returncode}: " + result.stdout[-2000:] + result.stderr[-2000:]
    return dict(answer)


def test_the_inspector_lists_the_tools_a_key_may_call(live_server):
    secret = make_key(scopes=["pages:read"]).secret
    listed = inspector(live_server, secret, "--method", "tools/list")
    # An owner's key also reads the key policy (get_key_policy), whatever its scopes.
    names = sorted(tool["name"] for tool in listed["tools"])
    assert names == ["get_key_policy", "get_workspace", "list_pages"]


def test_the_inspector_shows_gatehouses_message_for_a_tool_error(live_server):
    secret = make_key(scopes=["pages:write"]).secret
    answer = inspector(
        live_server,
        secret,
        "--method",
        "tools/call",
        "--tool-name",
        "update_workspace",
        "--tool-arg",
        "timezone=Europe/Berln",
    )
    assert answer["isError"] is True
    text = answer["content"][0]["text"]
    assert text.startswith("invalid-input: ") and "did you mean Europe/Berlin" in text


def test_the_inspector_calls_a_tool_and_gets_its_record(live_server):
    created = make_key(scopes=["pages:read"])
    answer = inspector(
        live_server, created.secret, "--method", "tools/call", "--tool-name", "get_workspace"
    )
    assert answer.get("isError") in (None, False)
    assert answer["structuredContent"]["workspaceId"] == str(created.key.workspace_id)


def test_the_mcp_line_the_demo_prints_works_as_printed(live_server, settings):
    import shlex
    from io import StringIO

    from django.core.management import call_command

    settings.DEBUG = True
    out = StringIO()
    call_command("demo", "--base-url", live_server.url, stdout=out)
    line = next(line for line in out.getvalue().splitlines() if "npx -y" in line).strip()
    if shutil.which("npx") is None:
        pytest.skip("npx is missing")
    result = subprocess.run(shlex.split(line), capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    names = {tool["name"] for tool in json.loads(result.stdout)["tools"]}
    assert {"get_workspace", "update_workspace", "create_page"} <= names


def test_the_inspector_manages_keys_through_the_three_key_tools_and_never_gets_a_secret(
    live_server,
):
    from apps.api.scopes import EVERY_SCOPE
    from apps.api_keys.models import ApiKey

    manager = make_key(scopes=EVERY_SCOPE, name="Manager")
    target = make_key(user=manager.key.user, name="Target")
    listed = inspector(live_server, manager.secret, "--method", "tools/list")
    names = {tool["name"] for tool in listed["tools"]}
    assert {"list_keys", "get_key", "revoke_key"} <= names
    assert not names & {"create_key", "roll_key"}  # they hand out secrets

    keys = inspector(
        live_server, manager.secret, "--method", "tools/call", "--tool-name", "list_keys"
    )
    assert [k["name"] for k in keys["structuredContent"]["data"]] == ["Target", "Manager"]
    assert "secret" not in json.dumps(keys)
    revoked = inspector(
        live_server,
        manager.secret,
        "--method",
        "tools/call",
        "--tool-name",
        "revoke_key",
        "--tool-arg",
        f"keyId={target.key.pk}",
    )
    assert revoked["structuredContent"]["state"] == "revoked"
    assert ApiKey.objects.get(pk=target.key.pk).revoked_at is not None


def test_the_inspector_lists_and_calls_tools_with_a_key_an_oauth_sign_in_issued(live_server):
    from tests.client import Client
    from tests.factories import WorkspaceFactory, owner_of
    from tests.oauth.helpers import connect

    workspace = WorkspaceFactory(name="Acme")
    browser = Client()
    browser.force_login(owner_of(workspace))
    token = connect(Client(), browser, workspace, scopes=("pages:read",))
    listed = inspector(live_server, token["access_token"], "--method", "tools/list")
    tools = {tool["name"]: tool["description"] for tool in listed["tools"]}
    assert {"get_workspace", "list_pages"} <= set(tools)
    assert "not yet granted" not in tools["list_pages"]
    # A connected app also sees the tools it may step up to (a new sign-in grants the scope);
    # never the keys tools, which no connected app may hold.
    assert "Needs pages:write, not yet granted" in tools["create_page"]
    assert not {"list_keys", "revoke_key"} & set(tools)
    answer = inspector(
        live_server, token["access_token"], "--method", "tools/call", "--tool-name", "get_workspace"
    )
    assert answer["structuredContent"]["workspaceId"] == str(workspace.pk)
