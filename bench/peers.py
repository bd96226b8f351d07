"""Gatehouse beside the best-known Django key libraries, in the shared harness's own run.

    python3 bench/peers.py [--keys N] [--restricted]   # needs ../shared/bench and PostgreSQL

Serves Gatehouse as that harness asks (gunicorn, 2 sync workers, DEBUG off, PostgreSQL over the
local socket with persistent connections, rate limiter on with a limit no run reaches), mints a
key, and runs `../shared/bench/run.sh` with Gatehouse's authenticated GET /api/v1/workspace as
its extra target, so the report gives Gatehouse's ratio to the bare Django view of the same run.
With --keys N, N more keys are put in the table first (one INSERT ... SELECT), to show that a
lookup by the indexed hash does not grow with the table. With --restricted the harness runs
twice against the same server, back to back: first with the plain key, then with a key that
carries 20 allowed networks (the matching one last) and 50 chosen communities, so each run's
ratio to its own bare view shows what carrying restrictions costs.
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED_BENCH = ROOT.parent / "shared" / "bench"
sys.path.insert(0, str(ROOT / "scripts"))
from local_server import gunicorn, manage, production_like_env  # noqa: E402

DATABASE = "gatehouse_peers"

# Run by `manage.py shell`: copies the bench key N times with distinct hashes, in one statement.
FILL_KEYS = """
from django.db import connection
from apps.api_keys.models import ApiKey
table = ApiKey._meta.db_table
columns = [f.column for f in ApiKey._meta.concrete_fields if f.column != "id"]
values = {"secret_hash": "encode(sha256(('filler-' || n)::bytea), 'hex')", "name": "'filler ' || n"}
select = ", ".join(values.get(c, "k." + c) for c in columns)
with connection.cursor() as cursor:
    cursor.execute(
        f"INSERT INTO {table} ({', '.join(columns)}) SELECT {select} "
        f"FROM {table} k, generate_series(1, %s) AS n WHERE k.id = (SELECT min(id) FROM {table})",
        [COUNT],
    )
    cursor.execute(f"ANALYZE {table}")
print(ApiKey.objects.count())
"""


# Run by `manage.py shell`: 50 communities and a key limited to them and to 20 networks, of
# which only the last (loopback) matches the benchmark's client.
RESTRICTED_KEY = """
from datetime import timedelta
from django.utils import timezone
from apps.accounts.models import User
from apps.api_keys.restrictions import Restrictions
from apps.api_keys.services import api_key_create
from apps.communities.models import Community
user = User.objects.get(email="bench@example.com")
workspace = user.memberships.get().workspace
ids = [Community.objects.create(workspace=workspace, name=f"C{n}").pk for n in range(50)]
networks = tuple(f"10.{n}.0.0/16" for n in range(10)) + tuple(
    f"2001:db8:{n}::/48" for n in range(9)
) + ("127.0.0.0/8",)
created = api_key_create(
    workspace=workspace, user=user, name="restricted", scopes=["products:read"],
    expires_at=timezone.now() + timedelta(days=300),
    restrictions=Restrictions(communities=tuple(ids), networks=networks),
)
print(created.secret)
"""


def fresh_bench_database(name: str, database: str) -> tuple[dict, str]:
    """A new PostgreSQL database `database`, migrated, with one workspace and one key; the
    production-like environment that serves it (the local socket and persistent connections,
    as the harness's peers use them; a rate limit no run reaches) and the key's secret."""
    subprocess.run(["dropdb", "--if-exists", "-h", "127.0.0.1", "-U", "postgres", database])
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", database], check=True)
    env = production_like_env(
        name,
        DATABASE_URL=f"postgres://postgres@/{database}?host=/var/run/postgresql",
        DATABASE_CONN_MAX_AGE="600",
        API_RATE_LIMIT_PER_MINUTE="1000000000",
    )
    manage(env, "migrate", "--noinput")
    workspace_id = manage(env, "createworkspace", "Bench", "--owner", "bench@example.com")
    secret = manage(
        env,
        "createapikey",
        *("--workspace", workspace_id, "--user", "bench@example.com", "--name", "bench"),
        *("--scopes", "products:read"),
    )
    return env, secret


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=0, help="extra keys in the table first")
    parser.add_argument(
        "--restricted", action="store_true", help="then again with a heavily restricted key"
    )
    args = parser.parse_args()
    if not (SHARED_BENCH / "run.sh").exists():
        print(f"No harness at {SHARED_BENCH}")
        return 2
    env, secret = fresh_bench_database("peers", DATABASE)
    if args.keys:
        total = manage(env, "shell", "-c", FILL_KEYS.replace("COUNT", str(int(args.keys))))
        print(f"{total} keys in the table")
    runs = [("gatehouse", secret)]
    if args.restricted:
        runs.append(("gatehouse-restricted", manage(env, "shell", "-c", RESTRICTED_KEY)))
    with gunicorn(env, workers=2) as (base, _server):
        for name, key in runs:
            harness_env = dict(
                os.environ,
                EXTRA_NAME=name,
                EXTRA_URL=f"{base}/api/v1/workspace",
                EXTRA_AUTH_HEADER=f"Authorization: Bearer {key}",
            )
            run = subprocess.run(["bash", str(SHARED_BENCH / "run.sh")], env=harness_env)
            if run.returncode:
                return run.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
