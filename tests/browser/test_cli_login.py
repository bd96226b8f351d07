"""`gatehouse login` end to end: the CLI as a subprocess, the approval in Chromium."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from apps.api_keys.models import ApiKey, ApiKeyState
from apps.workspaces.models import Workspace
from tests.factories import PASSWORD, WorkspaceFactory, owner_of

pytestmark = pytest.mark.django_db(transaction=True)
GATEHOUSE = Path(sys.executable).with_name("gatehouse")


def cli_env(tmp_path: Path, live_server) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEHOUSE_")}
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)  # never the desktop's own keychain: the file
    return {**env, "XDG_CONFIG_HOME": str(tmp_path), "GATEHOUSE_URL": live_server.url}


def gatehouse(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(GATEHOUSE), *args], env=env, capture_output=True, text=True, timeout=60
    )


def login_started(env: dict, scopes: str | None) -> tuple[subprocess.Popen, str]:
    """`gatehouse login` running (with `--scopes` unless None), and the user code it printed."""
    asked = ["--scopes", scopes] if scopes is not None else []
    login = subprocess.Popen(
        [str(GATEHOUSE), "login", "--no-browser", *asked],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = []
    while True:
        line = login.stderr.readline()
        if not line:
            login.kill()
            pytest.fail(f"the CLI ended early: {''.join(lines)}")
        lines.append(line)
        if found := re.search(r"code: ([A-Z]{4}-[A-Z]{4})", line):
            return login, found.group(1)


def code_entered(page, owner, code: str) -> None:
    """Sign in on /device and type the code, as a person would."""
    page.goto("/device")
    page.wait_for_url("**/sign-in/**")
    page.fill("input[name=login]", owner.email)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/device**")
    page.fill("#user-code", code.replace("-", "").lower())
    page.click("button:has-text('Continue')")
    assert page.text_content("[data-testid=confirm-code]") == code


def approved(page, login: subprocess.Popen) -> str:
    """Press Approve on /device; what the CLI printed once it received its key."""
    page.click("button:has-text('Approve')")
    assert "CLI login approved" in page.text_content("main")
    out, err = login.communicate(timeout=60)
    assert login.returncode == 0, err
    return out


def test_login_approve_whoami_set_and_logout(page, live_server, tmp_path, shoot):
    owner = owner_of(WorkspaceFactory(name="Acme"), email="ada@example.com")
    env = cli_env(tmp_path, live_server)
    login, code = login_started(env, "pages:read,pages:write")
    try:
        code_entered(page, owner, code)
        assert "CLI on" in page.text_content("[data-testid=device-name]")
        assert page.locator("input[value='products:read']").count() == 0  # not asked for
        shoot(page, "40-cli-approve")
        out = approved(page, login)
    finally:
        login.kill()
    assert out.startswith("Logged in (scopes: pages:read pages:write).")
    assert re.search(r"^Workspace name +Acme$", out, re.M)
    assert re.search(r"^User email +ada@example.com$", out, re.M)
    credentials = tmp_path / "gatehouse" / "credentials.json"
    assert oct(credentials.stat().st_mode & 0o777) == "0o600"

    whoami = gatehouse(env, "whoami")
    assert whoami.returncode == 0, whoami.stderr
    assert re.search(r"^User email +ada@example.com$", whoami.stdout, re.M)
    assert re.search(r"^Scopes +pages:read pages:write$", whoami.stdout, re.M)
    assert re.search(r"^Key name +CLI on ", whoami.stdout, re.M)
    assert re.search(
        r"^Key expires +[A-Z][a-z]{2} \d{1,2}, 20\d\d \d\d:\d\d \S+ \(in 3 months\)$",
        whoami.stdout,
        re.M,
    )

    changed = gatehouse(env, "workspace", "set", "--timezone", "Europe/Berlin")
    assert changed.returncode == 0, changed.stderr
    assert Workspace.objects.get(name="Acme").timezone == "Europe/Berlin"  # owners may

    key = ApiKey.objects.get(user=owner)
    assert key.tag == ApiKey.Tag.CLI
    logout = gatehouse(env, "logout")
    assert logout.returncode == 0, logout.stderr
    key.refresh_from_db()
    assert key.state == ApiKeyState.REVOKED
    after = gatehouse(env, "whoami")
    assert after.returncode == 1
    assert "Not logged in" in after.stderr


def test_a_plain_login_offers_the_keys_scopes_and_runs_the_keys_commands(
    page, live_server, tmp_path
):
    owner = owner_of(WorkspaceFactory(name="Acme"), email="ada@example.com")
    env = cli_env(tmp_path, live_server)
    before = gatehouse(env, "login", "--help")
    assert "keys:read,keys:write" in "".join(before.stdout.split())  # the default asks for them
    login, code = login_started(env, None)
    try:
        code_entered(page, owner, code)
        assert "API keys" in page.text_content("main")
        page.uncheck("input[value='keys:write']")
        out = approved(page, login)
    finally:
        login.kill()
    assert out.startswith("Logged in (scopes: ") and "keys:read" in out.split(")")[0]
    assert "keys:write" not in out.split(")")[0]
    listed = gatehouse(env, "keys", "list")
    assert listed.returncode == 0, listed.stderr
    assert "CLI on" in listed.stdout
    refused = gatehouse(env, "keys", "create", "--name", "Deploy", "--scopes", "pages:read")
    assert refused.returncode == 1
    # The command to copy, and what to approve this time.
    assert "run `gatehouse login` and approve keys:write this time." in refused.stderr
