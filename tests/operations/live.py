"""A gunicorn of this tree on a free port, for the tests that need real processes."""

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from tests.common.test_logging import ROOT, _free_port

BIN = Path(sys.executable).parent


def get(url: str, timeout: float = 10, **headers: str) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@contextmanager
def gunicorn(env: dict, log: Path, *args: str, workers: int = 1):
    """Serve with gunicorn until the block ends; yields the base URL and the master's pid."""
    port = _free_port()
    command = [str(BIN / "gunicorn"), "config.wsgi", "-b", f"127.0.0.1:{port}", "-w", str(workers)]
    with open(log, "w") as out:
        server = subprocess.Popen([*command, *args], cwd=ROOT, env=env, stdout=out, stderr=out)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                get(f"{base}/livez", timeout=2)
                break
            except OSError:
                if server.poll() is not None:
                    raise AssertionError(f"gunicorn exited: {log.read_text()}") from None
                time.sleep(0.2)
        else:
            raise AssertionError(f"gunicorn did not answer: {log.read_text()}")
        yield base, server.pid
    finally:
        server.terminate()
        server.wait(15)


def server_env(tmp_path: Path, **overrides: str) -> dict:
    env = {
        k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "PROMETHEUS_MULTIPROC_DIR")
    }
    env.update(DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3", DEBUG="true", LOG_LEVEL="WARNING")
    env.update(overrides)
    return env


def manage(env: dict, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def migrated_with_a_key(env: dict) -> str:
    """Migrate the database of `env`, make a workspace and a products:read key; its secret."""
    manage(env, "migrate", "--noinput")
    workspace = manage(env, "createworkspace", "Ops", "--owner", "ops@example.com")
    return manage(
        env, "createapikey", "--workspace", workspace.splitlines()[-1], "--user",
        "ops@example.com", "--name", "ops", "--scopes", "products:read",
    ).splitlines()[-1]  # fmt: skip
