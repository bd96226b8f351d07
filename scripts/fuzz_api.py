"""Fuzz the running API against its own OpenAPI document with schemathesis.

Serves the app with gunicorn on a free loopback port over a fresh database (a temporary SQLite
file, or DATABASE_URL when set), mints a key holding every scope, and runs every schemathesis
check. Exits non-zero on any server error or any response the document does not describe.

    .venv/bin/python scripts/fuzz_api.py [--max-examples N]
"""

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def manage(env: dict, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=100)
    parser.add_argument("extra", nargs="*", help="more schemathesis options, after --")
    args = parser.parse_args()

    tmp = tempfile.mkdtemp(prefix="gatehouse-fuzz-")
    env = dict(os.environ)
    env.setdefault("DATABASE_URL", f"sqlite:///{tmp}/fuzz.sqlite3")
    env["DEBUG"] = "false"
    env["SECRET_KEY"] = "fuzz-secret-key-" + "x" * 40
    env["API_KEY_HASH_SECRET"] = "fuzz-api-key-hash-secret"
    env["SECURE_SSL_REDIRECT"] = "false"
    env["API_RATE_LIMIT_PER_MINUTE"] = "0"  # the fuzzer sends thousands of requests a minute
    env["LOG_LEVEL"] = "WARNING"

    manage(env, "migrate", "--noinput")
    workspace_id = manage(env, "createworkspace", "Fuzz", "--owner", "fuzz@example.com")
    scopes = (
        "products:read,products:write,communities:read,communities:write,pages:read,pages:write"
    )
    secret = manage(
        env,
        "createapikey",
        "--workspace",
        workspace_id,
        "--user",
        "fuzz@example.com",
        "--name",
        "fuzzer",
        "--scopes",
        scopes,
    )
    manage(env, "createcommunity", "Fuzzers", "--workspace", workspace_id)
    port = free_port()
    server = subprocess.Popen(
        [
            str(BIN / "gunicorn"),
            "config.wsgi",
            "-b",
            f"127.0.0.1:{port}",
            "-w",
            "2",
            "--access-logfile",
            "-",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        stdout=open(f"{tmp}/access.log", "w"),
        stderr=subprocess.STDOUT,
    )
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        else:
            print("The server did not start; see", f"{tmp}/access.log")
            return 1
        command = [
            str(BIN / "schemathesis"),
            "--config-file",
            str(ROOT / "scripts" / "schemathesis.toml"),
            "run",
            f"http://127.0.0.1:{port}/api/v1/openapi.json",
            "--header",
            f"Authorization: Bearer {secret}",
            "--checks",
            "all",
            "--exclude-checks",
            "object_level_authorization",
            "--max-examples",
            str(args.max_examples),
            "--workers",
            "2",
            "--seed",
            os.environ.get("FUZZ_SEED", "20261122"),
            *args.extra,
        ]
        print(
            "$",
            " ".join(c if secret not in c else "Authorization: Bearer <key>" for c in command),
            flush=True,
        )
        return subprocess.run(command, cwd=ROOT, env=env).returncode
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
