"""The CLI as a subprocess: configuration, output and errors, against a live server."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.utils import timezone

from apps.api_keys.services import api_key_revoke
from apps.audit.services import Actor
from tests.factories import make_community, make_key

GATEHOUSE = Path(sys.executable).with_name("gatehouse")


def run(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(GATEHOUSE), *args], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def env(tmp_path) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GATEHOUSE_")}
    clean.pop("DBUS_SESSION_BUS_ADDRESS", None)  # never the desktop's own keychain
    return {**clean, "XDG_CONFIG_HOME": str(tmp_path)}


def write_credentials(tmp_path: Path, data: dict, mode: int = 0o600) -> Path:
    folder = tmp_path / "gatehouse"
    folder.mkdir(exist_ok=True)
    path = folder / "credentials.json"
    path.write_text(json.dumps(data))
    path.chmod(mode)
    return path


def test_a_credentials_file_others_can_read_is_refused(env, tmp_path):
    path = write_credentials(tmp_path, {"api_key": "gwk_x", "url": "http://127.0.0.1:9"}, 0o644)
    result = run(env, "whoami")
    assert result.returncode == 1
    assert result.stderr.startswith("error: ")
    assert "chmod 600" in result.stderr and str(path) in result.stderr
    assert "Traceback" not in result.stderr


def test_not_logged_in_says_how_to_log_in(env):
    result = run(env, "whoami")
    assert result.returncode == 1
    assert "gatehouse login" in result.stderr


def test_a_dropped_connection_is_one_line_and_no_traceback(env):
    env["GATEHOUSE_API_KEY"] = "gwk_anything"
    env["GATEHOUSE_URL"] = "http://127.0.0.1:9"  # nothing listens on the discard port
    result = run(env, "products", "list")
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert "Cannot reach http://127.0.0.1:9" in result.stderr
    assert "Traceback" not in result.stderr


def test_login_takes_the_server_address_after_the_command(env):
    env["GATEHOUSE_URL"] = "http://127.0.0.1:8"
    result = run(env, "login", "--url", "http://127.0.0.1:9/", "--no-browser")
    assert result.returncode == 1
    assert "Cannot reach http://127.0.0.1:9/oauth/device/code" in result.stderr


def test_login_to_a_server_that_is_not_there_says_which_and_how_to_choose(env):
    result = run(env, "login", "--no-browser")  # the default address, where nothing runs here
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert "Is Gatehouse running at http://127.0.0.1:8000?" in result.stderr
    assert "gatehouse login --url URL" in result.stderr and "GATEHOUSE_URL" in result.stderr


@pytest.mark.django_db(transaction=True)
def test_json_goes_anywhere_and_errors_under_it_are_json(env, live_server):
    key = make_key(scopes=["products:read"])
    env.update(GATEHOUSE_API_KEY=key.secret, GATEHOUSE_URL=live_server.url)
    listed = run(env, "products", "list", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout) == {"data": []}
    refused = run(env, "products", "create", "--name", "X", "--price-cents", "1", "--json")
    assert refused.returncode == 1 and refused.stdout == ""
    error = json.loads(refused.stderr)
    assert error["error"] == "insufficient-scope" and "products:write" in error["message"]


@pytest.mark.django_db(transaction=True)
def test_whoami_names_the_server_and_the_key(env, live_server):
    key = make_key()
    env.update(GATEHOUSE_API_KEY=key.secret, GATEHOUSE_URL=live_server.url)
    shown = run(env, "whoami").stdout
    assert re.search(rf"^Server +{re.escape(live_server.url)}$", shown, re.M)
    assert re.search(rf"^Key +{re.escape(key.key.hint)}$", shown, re.M)
    assert key.secret not in shown


@pytest.mark.django_db(transaction=True)
def test_commands_print_tables_and_json(env, live_server):
    key = make_key()
    community = make_community(workspace=key.key.workspace, name="Makers")
    env.update(GATEHOUSE_API_KEY=key.secret, GATEHOUSE_URL=live_server.url)
    created = run(env, "products", "create", "--name", "Course", "--price-cents", "1999")
    assert created.returncode == 0, created.stderr
    table = run(env, "products", "list").stdout.splitlines()
    assert table[0].split() == ["ID", "NAME", "PRICE", "CREATED", "AT"]
    assert "Course" in table[1] and "19.99" in table[1]
    # A time people read, as the dashboard writes it, with its zone.
    assert re.search(r"\b[A-Z][a-z]{2} \d{1,2}, 20\d\d \d\d:\d\d [A-Z+\-0-9]+\b", table[1])
    listed = json.loads(run(env, "--json", "communities", "list").stdout)
    assert [c["name"] for c in listed["data"]] == ["Makers"]
    posted = run(env, "posts", "create", str(community.pk), "--title", "Hi", "--body", "Hello")
    assert posted.returncode == 0, posted.stderr
    assert "Hi" in run(env, "posts", "list", str(community.pk)).stdout
    assert run(env, "pages", "create", "--title", "About", "--slug", "about").returncode == 0
    assert "about" in run(env, "pages", "list").stdout
    workspace = json.loads(run(env, "--json", "workspace", "get").stdout)
    assert workspace["workspaceId"] == str(key.key.workspace_id)


@pytest.mark.django_db(transaction=True)
def test_api_errors_are_one_clear_line(env, live_server):
    key = make_key(scopes=["products:read"])
    env.update(GATEHOUSE_API_KEY=key.secret, GATEHOUSE_URL=live_server.url)
    refused = run(env, "products", "create", "--name", "X", "--price-cents", "1")
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: ") and refused.stderr.count("\n") == 1
    assert "products:write" in refused.stderr and "(insufficient-scope)" in refused.stderr
    assert "run `gatehouse login` and approve products:write this time." in refused.stderr
    bad = run(env, "workspace", "set", "--timezone", "Mars/Olympus")
    assert bad.returncode == 1 and "(insufficient-scope)" in bad.stderr


@pytest.mark.django_db(transaction=True)
def test_a_revoked_key_says_to_log_in_again(env, live_server):
    key = make_key()
    api_key_revoke(key=key.key, actor=Actor.of_operator("test"))
    env.update(GATEHOUSE_API_KEY=key.secret, GATEHOUSE_URL=live_server.url)
    result = run(env, "whoami")
    assert result.returncode == 1
    assert "Run `gatehouse login` to log in again" in result.stderr
    assert "(revoked-key)" in result.stderr


@pytest.mark.django_db(transaction=True)
def test_invalid_input_names_the_field(env, live_server):
    key = make_key()
    env.update(GATEHOUSE_API_KEY=key.secret, GATEHOUSE_URL=live_server.url)
    result = run(env, "workspace", "set", "--timezone", "Mars/Olympus")
    assert result.returncode == 1
    assert "timezone" in result.stderr and "(invalid-input)" in result.stderr


def test_a_new_operation_becomes_a_command_with_no_cli_change(monkeypatch):
    """The CLI reads operations.json: a spec it has never seen turns into a working command."""
    import click
    from click.testing import CliRunner
    from gatehouse_cli import commands
    from gatehouse_cli.config import Credentials

    spec = {
        "group": "widgets",
        "verb": "create",
        "operation": "create_widget",
        "method": "POST",
        "path": "/shops/{shopId}/widgets",
        "help": "Create a widget in a shop.",
        "arguments": [{"name": "shopId", "metavar": "SHOP_ID", "min": 1, "max": 99}],
        "options": [],
        "fields": [
            {
                "name": "widgetName",
                "flag": "widget-name",
                "type": "string",
                "required": True,
                "help": "The name.",
            },
            {
                "name": "isBlue",
                "flag": "is-blue",
                "type": "boolean",
                "required": False,
                "help": "Blue or not.",
            },
        ],
        "atLeastOneField": False,
        "columns": None,
    }
    sent = {}

    def fake_request(self, method, path, body=None, **params):
        sent.update(method=method, path=path, body=body)
        return {"id": 7, "widgetName": body["widgetName"]}

    group = click.Group("gatehouse")
    monkeypatch.setattr(commands, "TABLE", {"apiBase": "/api/v1", "commands": [spec]})
    monkeypatch.setattr(commands.Api, "request", fake_request)
    commands.add_operation_commands(group)
    result = CliRunner().invoke(
        group,
        ["widgets", "create", "3", "--widget-name", "Gear", "--is-blue"],
        obj={"json": False, "url": "http://x", "credentials": Credentials(api_key="gwk_x")},
    )
    assert result.exit_code == 0, result.output
    assert sent == {
        "method": "POST",
        "path": "/shops/3/widgets",
        "body": {"widgetName": "Gear", "isBlue": True},
    }
    assert "Widget name  Gear" in result.output


@pytest.mark.django_db(transaction=True)
def test_the_server_serves_an_installable_cli(live_server, tmp_path):
    """The dashboard's CLI card says `pipx install <server>/cli/gatehouse.tar.gz`: pip builds
    and installs that very file, and the command it installs works."""
    target = tmp_path / "site"
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--disable-pip-version-check",
            "--target",
            str(target),
            f"{live_server.url}/cli/gatehouse.tar.gz",
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    env = {**os.environ, "PYTHONPATH": str(target)}
    version = subprocess.run(
        [str(target / "bin" / "gatehouse"), "--version"], env=env, capture_output=True, text=True
    )
    assert version.returncode == 0 and "gatehouse" in version.stdout
    helped = subprocess.run(
        [str(target / "bin" / "gatehouse"), "products", "--help"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert "create" in helped.stdout and "list" in helped.stdout  # the command table came along


def test_auth_status_of_a_revoked_key_keeps_the_record_and_marks_it(env, live_server):
    made = make_key()
    env.update(GATEHOUSE_API_KEY=made.secret, GATEHOUSE_URL=live_server.url)
    working = run(env, "auth", "status")
    assert working.returncode == 0, working.stderr
    assert re.search(r"^Status +✓ Logged in$", working.stdout, re.M)
    assert run(env, "auth", "token").stdout == made.secret + "\n"  # alone, for a script

    made.key.revoked_at = timezone.now()
    made.key.save(update_fields=["revoked_at"])
    revoked = run(env, "auth", "status")
    assert revoked.returncode == 1
    assert re.search(r"^Status +✗ .*revoked.*gatehouse login", revoked.stdout, re.M)
    assert re.search(rf"^Server +{re.escape(live_server.url)}$", revoked.stdout, re.M)
    assert re.search(r"^Kept in +GATEHOUSE_API_KEY \(the environment\)$", revoked.stdout, re.M)
    assert re.search(r"^Error +revoked-key$", revoked.stdout, re.M)


def test_auth_token_without_a_login_says_how(env):
    result = run(env, "auth", "token")
    assert result.returncode == 1 and result.stdout == ""
    assert "gatehouse login" in result.stderr
