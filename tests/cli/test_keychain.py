"""Where `gatehouse login` keeps the key, as `gh` does: the system keychain (a real Secret
Service: gnome-keyring in a D-Bus session of the test's own), else, said once, a 0600 file;
`gatehouse auth status` says which. The CLI runs as a subprocess against a live server, and
each login is approved as the owner would approve it on /device."""

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from apps.api_keys.models import ApiKey
from tests.client import Client
from tests.factories import WorkspaceFactory, owner_of

pytestmark = pytest.mark.django_db(transaction=True)
GATEHOUSE = Path(sys.executable).with_name("gatehouse")
CODE = re.compile(r"code: ([A-Z]{4}-[A-Z]{4})")


@pytest.fixture
def owner():
    return owner_of(WorkspaceFactory(name="Acme"), email="ada@example.com")


@pytest.fixture
def env(tmp_path, live_server) -> dict:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GATEHOUSE_") and k != "DBUS_SESSION_BUS_ADDRESS"
    }
    return {
        **clean,
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "GATEHOUSE_URL": live_server.url,
        "PATH": f"{GATEHOUSE.parent}:{os.environ['PATH']}",
    }


def approving(command: list[str], env: dict, owner) -> subprocess.CompletedProcess:
    """Run `command` (a login, or a script of several), approving on /device each code it
    prints, as the owner; what it printed once it ended."""
    browser = Client()
    browser.force_login(owner)
    workspace = owner.memberships.get().workspace
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    said: list[str] = []
    timer = threading.Timer(120, process.kill)
    timer.start()
    try:
        for line in process.stderr:
            said.append(line)
            if found := CODE.search(line):
                answer = browser.post(
                    "/device",
                    {
                        "user_code": found.group(1),
                        "decision": "approve",
                        "workspace": str(workspace.pk),
                        "scopes": ["products:read"],
                    },
                )
                assert answer.status_code in (200, 302), answer.content[:500]
        out = process.stdout.read()
        process.wait()
    finally:
        timer.cancel()
    return subprocess.CompletedProcess(command, process.returncode, out, "".join(said))


def sections(out: str) -> dict[str, str]:
    """The script's output by its `=== name` markers."""
    parts = re.split(r"^=== (\S+)\n", out, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_key_is_kept_in_the_secret_service_and_status_says_so(env, owner, live_server):
    missing = [
        t
        for t in ("dbus-run-session", "gnome-keyring-daemon", "secret-tool")
        if not shutil.which(t)
    ]
    if missing:
        if os.environ.get("GATEHOUSE_REQUIRE_BROWSER"):
            pytest.fail(f"missing {missing}: apt-get install gnome-keyring dbus libsecret-tools")
        pytest.skip(f"needs {', '.join(missing)} (Debian: gnome-keyring dbus libsecret-tools)")
    url = live_server.url
    credentials = Path(env["XDG_CONFIG_HOME"]) / "gatehouse" / "credentials.json"
    script = f"""
echo -n unlock | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1
gatehouse login --no-browser --scopes products:read || exit 9
echo "=== status"; gatehouse auth status
echo "=== whoami"; gatehouse whoami
echo "=== file"; cat {credentials}; echo
echo "=== keychain"; secret-tool lookup service gatehouse username {url}; echo
echo "=== logout"; gatehouse logout
echo "=== after"; secret-tool lookup service gatehouse username {url}; echo "lookup $?"
echo "=== insecure"; gatehouse login --no-browser --scopes products:read --insecure-storage
echo "=== status2"; gatehouse auth status
echo "=== keychain2"; secret-tool lookup service gatehouse username {url}; echo "lookup $?"
"""
    done = approving(["dbus-run-session", "--", "sh", "-c", script], env, owner)
    assert done.returncode == 0, done.stdout + done.stderr
    out = sections(done.stdout)
    keys = ApiKey.objects.filter(user=owner).order_by("pk")
    first, second = keys[0], keys[1]
    # The keychain holds the key; the file holds the rest, not the key.
    secret = out["keychain"].strip()
    assert secret.startswith("gwk_") and first.hint == f"gwk_…{secret[-4:]}"
    stored = json.loads(out["file"])
    assert "api_key" not in stored and stored["storage"] == "keychain"
    assert "gwk_" not in out["file"]
    status = out["status"]
    assert re.search(rf"^Server +{re.escape(url)}$", status, re.M)
    assert re.search(r"^Account +ada@example\.com$", status, re.M)
    assert re.search(r"^Workspace +Acme$", status, re.M)
    assert re.search(rf"^Key +{re.escape(first.hint)}$", status, re.M)
    assert re.search(r"^Scopes +products:read$", status, re.M)
    assert re.search(
        r"^Expires +[A-Z][a-z]{2} \d{1,2}, 20\d\d \d\d:\d\d .*\(in 3 months\)$", status, re.M
    )
    assert re.search(r"^Kept in +the system keychain \(Secret Service\)$", status, re.M)
    assert "Acme" in out["whoami"]  # the key read back from the keychain works
    assert "Logged out" in out["logout"] and "lookup 1" in out["after"]  # and is deleted
    # --insecure-storage: the file, chosen without a word about the keychain.
    assert "lookup 1" in out["keychain2"]
    assert re.search(
        rf"^Kept in +{re.escape(str(credentials))} \(mode 0600\)$", out["status2"], re.M
    )
    assert json.loads(credentials.read_text())["api_key"].startswith("gwk_")
    assert credentials.stat().st_mode & 0o077 == 0
    assert "instead of the system keychain" not in done.stderr
    assert second.hint in out["status2"]


def test_without_a_keychain_the_key_goes_to_a_0600_file_said_once(env, owner):
    login = approving([str(GATEHOUSE), "login", "--no-browser"], env, owner)
    assert login.returncode == 0, login.stderr
    credentials = Path(env["XDG_CONFIG_HOME"]) / "gatehouse" / "credentials.json"
    assert login.stderr.count("instead of the system keychain: no system keychain was found") == 1
    assert f"Stored the key in {credentials} (mode 0600" in login.stderr
    assert "--insecure-storage" in login.stderr
    assert credentials.stat().st_mode & 0o077 == 0
    assert json.loads(credentials.read_text())["storage"] == "file"
    status = subprocess.run(
        [str(GATEHOUSE), "auth", "status"], env=env, capture_output=True, text=True, timeout=60
    )
    assert status.returncode == 0, status.stderr
    assert status.stderr == ""  # said at the login, not again
    assert re.search(
        rf"^Kept in +{re.escape(str(credentials))} \(mode 0600\)$", status.stdout, re.M
    )


def test_a_keychain_that_never_answers_is_waited_for_3_seconds(env, owner):
    """A keychain that takes the call and never answers (locked behind a prompt nobody
    sees): the login waits a bounded time, then keeps the key in the file, saying why."""
    env["PYTHONPATH"] = str(Path(__file__).parent)
    env["PYTHON_KEYRING_BACKEND"] = "silent_keychain.SilentKeychain"
    started = time.monotonic()
    login = approving([str(GATEHOUSE), "login", "--no-browser"], env, owner)
    assert login.returncode == 0, login.stderr
    assert "instead of the system keychain: the system keychain did not answer within 3 s" in (
        login.stderr
    )
    assert time.monotonic() - started < 60
    credentials = Path(env["XDG_CONFIG_HOME"]) / "gatehouse" / "credentials.json"
    assert json.loads(credentials.read_text())["api_key"].startswith("gwk_")


def test_secure_storage_refuses_the_file_before_the_browser(env, owner):
    """`--secure-storage` (or GATEHOUSE_REQUIRE_KEYCHAIN=1) with no keychain: refused before a
    code is shown, nothing stored, no key made; a key already in the file is refused too."""
    for how in (["--secure-storage"], []):
        run_env = dict(env, **({} if how else {"GATEHOUSE_REQUIRE_KEYCHAIN": "1"}))
        login = subprocess.run(
            [str(GATEHOUSE), "login", "--no-browser", *how],
            env=run_env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert login.returncode == 1, login.stderr
        assert "only in the system keychain, but no system keychain was found" in login.stderr
        assert "code" not in login.stderr.lower().replace("encoded", "")
    credentials = Path(env["XDG_CONFIG_HOME"]) / "gatehouse" / "credentials.json"
    assert not credentials.exists()
    assert not ApiKey.objects.filter(user=owner).exists()

    kept = approving([str(GATEHOUSE), "login", "--no-browser"], env, owner)  # the file, said
    assert kept.returncode == 0, kept.stderr
    refused = subprocess.run(
        [str(GATEHOUSE), "whoami"],
        env=dict(env, GATEHOUSE_REQUIRE_KEYCHAIN="1"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1
    assert "GATEHOUSE_REQUIRE_KEYCHAIN is set, and your key is kept in" in refused.stderr
