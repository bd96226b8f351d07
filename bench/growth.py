"""How the cost of a request grows with the key table and with many keys in use.

    .venv/bin/python bench/growth.py [--rounds 3] [--seconds 10] [--table-keys 1000000]

Serves Gatehouse as bench/peers.py does (gunicorn, 2 sync workers, DEBUG off, PostgreSQL over the
local socket, persistent connections, limiter on) and measures `GET /api/v1/workspace`, rounds
interleaved, in three set-ups:

- one key: the same key on every request (its last-use stamp is written once a minute);
- 10,000 keys in rotation: a wrk Lua script sends them in turn, so each key is seen about once
  a minute or less and its last-use stamp is due each time;
- the one key through the same Lua script, so that wrk's own cost is the same as in the
  rotation (wrk runs on the same two cores);
- the one key again, after `--table-keys` more keys are put in the table.

For each: req/s, p50 and p99 latency (medians over the rounds) and the SQL statements per
request, counted by PostgreSQL itself (pg_stat_database.xact_commit: in autocommit every
statement is one transaction) divided by the requests wrk made.
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "bench"))
from auth_overhead import wrk  # noqa: E402
from local_server import gunicorn, manage  # noqa: E402
from peers import FILL_KEYS, fresh_bench_database  # noqa: E402

DATABASE = "gatehouse_growth"
ROTATION = 10_000

MAKE_KEYS = """
import sys
from datetime import timedelta
from django.utils import timezone
from apps.api_keys import tokens
from apps.api_keys.models import ApiKey
template = ApiKey.objects.get()
secrets = [tokens.generate_secret("workspace") for _ in range(COUNT)]
ApiKey.objects.bulk_create(
    [
        ApiKey(
            workspace_id=template.workspace_id,
            user_id=template.user_id,
            name=f"rotation {n}",
            scopes=template.scopes,
            secret_hash=tokens.hash_secret(secret),
            hint=tokens.hint_for(secret),
            expires_at=template.expires_at,
            # Used before, so a request stamps the last use but records no first use.
            last_used_at=timezone.now() - timedelta(days=1),
        )
        for n, secret in enumerate(secrets)
    ],
    batch_size=2000,
)
with open(PATH, "w") as out:
    out.write("\\n".join(secrets) + "\\n")
print(len(secrets))
"""

ROTATION_LUA = """
local keys = {}
for line in io.lines("%(path)s") do keys[#keys + 1] = line end
local counter = 0
function setup(thread)
  thread:set("offset", math.random(1, #keys))
end
function request()
  counter = counter + 1
  local key = keys[(counter + (offset or 0)) %% #keys + 1]
  return wrk.format("GET", nil, {["Authorization"] = "Bearer " .. key})
end
"""


def psql(sql: str) -> str:
    return subprocess.run(
        ["psql", "-qtA", "-h", "127.0.0.1", "-U", "postgres", DATABASE, "-c", sql],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def commits() -> int:
    sql = f"SELECT xact_commit FROM pg_stat_database WHERE datname = '{DATABASE}'"  # noqa: S608
    return int(psql(sql))


def measure(url: str, seconds: int, header: str | None, script: str | None) -> dict[str, float]:
    before = commits()
    result = wrk(url, seconds, 16, header, script)
    # pg_stat_database is updated when a backend reports its counters; give it a moment.
    subprocess.run(["sleep", "1"])
    result["queries"] = (commits() - before) / result["requests"]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--table-keys", type=int, default=1_000_000)
    args = parser.parse_args()

    env, secret = fresh_bench_database("growth", DATABASE)
    tmp = Path(tempfile.mkdtemp(prefix="gatehouse-growth-"))
    keys_file = tmp / "keys.txt"
    code = MAKE_KEYS.replace("COUNT", str(ROTATION)).replace("PATH", repr(str(keys_file)))
    manage(env, "shell", "-c", code)
    lua = tmp / "rotation.lua"
    lua.write_text(ROTATION_LUA % {"path": keys_file})
    # The same script over a file of one key: wrk then spends on each request what it spends
    # in the rotation (its Lua request() takes CPU from the same two cores as the server).
    one_file = tmp / "one.txt"
    one_file.write_text(secret + "\n")
    one_lua = tmp / "one.lua"
    one_lua.write_text(ROTATION_LUA % {"path": one_file})
    header = f"Authorization: Bearer {secret}"
    scripts = {"one key, the same script": str(one_lua), "10,000 keys in rotation": str(lua)}

    results: dict[str, list[dict[str, float]]] = {
        "one key": [],
        "one key, the same script": [],
        "10,000 keys in rotation": [],
    }
    with gunicorn(env, workers=2) as (base, _server):
        url = f"{base}/api/v1/workspace"
        wrk(url, 3, 16, header)  # warm-up
        wrk(url, 3, 16, None, str(lua))
        for round_number in range(args.rounds):
            order = list(results) if round_number % 2 == 0 else list(reversed(results))
            for name in order:
                if name == "one key":
                    results[name].append(measure(url, args.seconds, header, None))
                else:
                    results[name].append(measure(url, args.seconds, None, scripts[name]))
                print(f"round {round_number + 1}: {name}: {results[name][-1]}", flush=True)
    if args.table_keys:
        total = manage(env, "shell", "-c", FILL_KEYS.replace("COUNT", str(args.table_keys)))
        name = f"one key, {int(total):,} keys in the table"
        results[name] = []
        with gunicorn(env, workers=2) as (base, _server):
            url = f"{base}/api/v1/workspace"
            wrk(url, 3, 16, header)
            for round_number in range(args.rounds):
                results[name].append(measure(url, args.seconds, header, None))
                print(f"round {round_number + 1}: {name}: {results[name][-1]}", flush=True)

    print("\n| set-up | req/s | p50 ms | p99 ms | SQL statements per request |")
    print("|---|---|---|---|---|")
    for name, runs in results.items():

        def median(field: str, runs: list = runs) -> float:
            return statistics.median(run[field] for run in runs)

        print(
            f"| {name} | {median('rps'):.0f} | {median('p50'):.2f} | {median('p99'):.2f} "
            f"| {median('queries'):.2f} |"
        )
    rotation = results["10,000 keys in rotation"]
    for name in ("one key", "one key, the same script"):
        ratios = [r["rps"] / o["rps"] for r, o in zip(rotation, results[name], strict=True)]
        print(
            f"10,000 keys ÷ {name}: median {statistics.median(ratios):.2f} "
            f"(rounds {', '.join(f'{x:.2f}' for x in ratios)})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
