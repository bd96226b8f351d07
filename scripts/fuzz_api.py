"""Fuzz the running API against its own OpenAPI document with schemathesis.

Serves the app with gunicorn on a free loopback port over a fresh database (a temporary SQLite
file, or DATABASE_URL when set), mints a key holding every scope, and runs every schemathesis
check. Exits non-zero on any server error or any response the document does not describe.

The operations that change keys (create, roll, narrow, revoke) run second, with a key of their
own, and roll, narrow and revoke aim at one decoy key (`scripts/schemathesis.toml` pins their
keyId to FUZZ_DECOY_KEY_ID): a fuzzer free to pick ids rolls, narrows or revokes its own key
sooner or later and is answered 401 or 429 from then on, blind to everything else.

    .venv/bin/python scripts/fuzz_api.py [--max-examples N]
"""

import argparse
import os
import subprocess
import sys
import tempfile
from typing import Any

from local_server import BIN, ROOT, gunicorn, manage, production_like_env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=100)
    parser.add_argument("extra", nargs="*", help="more schemathesis options, after --")
    args = parser.parse_args()

    # The fuzzer sends thousands of requests a minute: no rate limit here.
    env = production_like_env(
        "fuzz",
        API_RATE_LIMIT_PER_MINUTE="0",
        DEVICE_CODES_PER_MINUTE="0",
        OAUTH_REGISTRATIONS_PER_MINUTE="0",
    )
    manage(env, "migrate", "--noinput")
    workspace_id = manage(env, "createworkspace", "Fuzz", "--owner", "fuzz@example.com")
    resources = (
        "products:read,products:write,communities:read,communities:write,pages:read,pages:write"
    )

    def key(name: str, scopes: str) -> str:
        return manage(
            env,
            *("createapikey", "--workspace", workspace_id, "--user", "fuzz@example.com"),
            *("--name", name, "--scopes", scopes),
        )

    secret = key("fuzzer", resources + ",keys:read")
    # The decoy first: it expires before the key that rolls it, so it is no wider than that key.
    key("decoy", resources)
    keys_secret = key("key fuzzer", resources + ",keys:read,keys:write")
    env["FUZZ_DECOY_KEY_ID"] = manage(
        env,
        *("shell", "-c"),
        "from apps.api_keys.models import ApiKey; print(ApiKey.objects.get(name='decoy').pk)",
    )
    manage(env, "createcommunity", "Fuzzers", "--workspace", workspace_id)
    # The fuzzer may turn on "two-factor required" through PATCH /workspace/policy; its owner
    # has an authenticator, as an owner who can turn that on has, so its keys keep working.
    manage(
        env,
        *("shell", "-c"),
        "from allauth.mfa.models import Authenticator; from apps.accounts.models import User; "
        "Authenticator.objects.create(user=User.objects.get(email='fuzz@example.com'), "
        "type=Authenticator.Type.TOTP, data={'secret': 'fuzz'})",
    )
    changes_keys = (
        "^(createKey|rollKey|narrowKey|revokeKey|updateKeyPolicy|approveKey|denyKey"
        "|createAuditStream|deleteAuditStream"
        "|createServiceAccount|updateServiceAccount|deleteServiceAccount|createServiceAccountKey)$"
    )
    with gunicorn(env) as (base, _server):
        # The two halves run side by side, each in a process of its own (a fuzzer is one core's
        # work, and Hypothesis may not run two threads in one): they hold different keys, and
        # the second changes only its own and the decoy.
        runs = [
            _schemathesis(base, secret, args, env, "--exclude-operation-id-regex", changes_keys),
            _schemathesis(
                base, keys_secret, args, env, "--include-operation-id-regex", changes_keys
            ),
        ]
        codes = [_finish(*run) for run in runs]
        # The authorization server's own document: its endpoints take no key.
        codes.append(_finish(*_schemathesis(base, None, args, env, document="/oauth/openapi.json")))
        return next((code for code in codes if code), 0)


def _schemathesis(
    base: str,
    secret: str | None,
    args: argparse.Namespace,
    env: dict,
    *filters: str,
    document: str = "/api/v1/openapi.json",
) -> tuple[str, subprocess.Popen, Any]:
    """Start one schemathesis run over the operations of `document` that `filters` select, with
    `secret` as the key: (its command as shown, the process, its log)."""
    command = [
        str(BIN / "schemathesis"),
        *("--config-file", str(ROOT / "scripts" / "schemathesis.toml")),
        *("run", base + document),
        *(("--header", f"Authorization: Bearer {secret}") if secret else ()),
        *("--checks", "all", "--exclude-checks", "object_level_authorization"),
        # One worker: with two, Hypothesis can call ast.parse in two threads at once, which
        # CPython 3.11 answers with "AST constructor recursion depth mismatch" (a crash of the
        # fuzzer itself, seen once in CI on GET /communities).
        *("--max-examples", str(args.max_examples), "--workers", "1"),
        *("--seed", os.environ.get("FUZZ_SEED", "20261122")),
        *filters,
        *args.extra,
    ]
    shown = " ".join(
        c if not secret or secret not in c else "Authorization: Bearer <key>" for c in command
    )
    log = tempfile.TemporaryFile("w+")
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    return shown, process, log


def _finish(shown: str, process: subprocess.Popen, log) -> int:
    """Wait for one schemathesis run; print its command and its whole report, one run at a
    time; its exit code."""
    code = process.wait()
    log.seek(0)
    print("$", shown, flush=True)
    print(log.read(), flush=True)
    log.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
