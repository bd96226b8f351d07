"""Serve Gatehouse with gunicorn on a free loopback port, production-like, for the fuzzer and the
benchmark: DEBUG off, throwaway secrets, a temporary SQLite file unless DATABASE_URL is set."""

import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def production_like_env(name: str, **overrides: str) -> dict[str, str]:
    tmp = tempfile.mkdtemp(prefix=f"gatehouse-{name}-")
    env = dict(os.environ)
    env.setdefault("DATABASE_URL", f"sqlite:///{tmp}/{name}.sqlite3")
    env.update(
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
        API_KEY_HASH_SECRET=secrets.token_urlsafe(48),
        SECURE_SSL_REDIRECT="false",
        LOG_LEVEL="WARNING",
        GATEHOUSE_TMP=tmp,
        **overrides,
    )
    return env


def manage(env: dict, *args: str) -> str:
    """Run a management command; its last line of output."""
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def gunicorn(env: dict, *, workers: int = 2):
    """Migrate, collect static files, serve; yields (base_url, server process)."""
    manage(env, "migrate", "--noinput")
    manage(env, "collectstatic", "--noinput")
    port = free_port()
    log = open(Path(env["GATEHOUSE_TMP"]) / "server.log", "w")
    server = subprocess.Popen(
        [
            str(BIN / "gunicorn"),
            "config.wsgi",
            "-b",
            f"127.0.0.1:{port}",
            "-w",
            str(workers),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise SystemExit(f"The server did not start; see {log.name}")
        yield base, server
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.close()
