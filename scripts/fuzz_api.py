"""Fuzz the running API against its own OpenAPI document with schemathesis.

Serves the app with gunicorn on a free loopback port over a fresh database (a temporary SQLite
file, or DATABASE_URL when set), mints a key holding every scope, and runs every schemathesis
check. Exits non-zero on any server error or any response the document does not describe.

    .venv/bin/python scripts/fuzz_api.py [--max-examples N]
"""

import argparse
import os
import subprocess
import sys

from local_server import BIN, ROOT, gunicorn, manage, production_like_env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=100)
    parser.add_argument("extra", nargs="*", help="more schemathesis options, after --")
    args = parser.parse_args()

    # The fuzzer sends thousands of requests a minute: no rate limit here.
    env = production_like_env("fuzz", API_RATE_LIMIT_PER_MINUTE="0", DEVICE_CODES_PER_MINUTE="0")
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
    with gunicorn(env) as (base, _server):
        command = [
            str(BIN / "schemathesis"),
            "--config-file",
            str(ROOT / "scripts" / "schemathesis.toml"),
            "run",
            f"{base}/api/v1/openapi.json",
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


if __name__ == "__main__":
    sys.exit(main())
