"""How much does key authentication cost? Serve the app with gunicorn on loopback and drive wrk
against GET /api/v1/workspace (with a valid key) and its unauthenticated twin, alternately.

    python3 dev.py bench [--seconds 5] [--rounds 8] [--connections 8] [--workers 2] [--mcp]

With --mcp the two targets are instead `tools/call get_workspace` on /mcp and
GET /api/v1/workspace, both with the same key: what the MCP door costs over the API.

Uses DATABASE_URL when set (e.g. PostgreSQL), else a temporary SQLite file. The rate limiter
stays on, with a limit too high to reach, so its counting is part of what is measured.
Prints requests per second, p50 and p99 latency per endpoint (medians over the rounds) and the
median ratio authenticated / unauthenticated over the rounds, plus the server's CPU time per
request (from /proc), which the machine's noise disturbs far less than throughput.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from local_server import gunicorn, manage, production_like_env  # noqa: E402

UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def server_cpu_seconds(master_pid: int) -> float:
    """User + system CPU time of the gunicorn workers so far (Linux /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    children = Path(f"/proc/{master_pid}/task/{master_pid}/children").read_text().split()
    total = 0
    for pid in children:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


MCP_CALL_LUA = """
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call",'
    .. '"params":{"name":"get_workspace","arguments":{}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-06-18"
"""


def wrk(
    url: str, seconds: int, connections: int, header: str | None, script: str | None = None
) -> dict[str, float]:
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", url]
    if header:
        command[1:1] = ["-H", header]
    if script:
        command[1:1] = ["-s", script]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    if re.search(r"Non-2xx or 3xx responses", out):
        raise SystemExit(f"wrk saw error responses from {url}:\n{out}")

    def latency(percent: str) -> float:
        value, unit = re.search(rf"^\s+{percent}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M).groups()
        return float(value) * UNITS[unit]

    return {
        "requests": float(re.search(r"(\d+) requests in", out).group(1)),
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "p50": latency("50"),
        "p99": latency("99"),
    }


def instructions_per_request(kind: str, requests: int = 200) -> float:
    """Instructions one in-process request costs, counted exactly by callgrind: the difference
    between a run serving `requests` requests and one serving none, divided by `requests`."""

    def total(n: int) -> int:
        result = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--callgrind-out-file=/dev/null",
                sys.executable,
                str(ROOT / "bench" / "instructions.py"),
                kind,
            ],
            # A fixed hash seed keeps dict layouts, and so the counts, the same from run to run.
            env={**os.environ, "BENCH_REQUESTS": str(n), "PYTHONHASHSEED": "0"},
            capture_output=True,
            text=True,
            check=True,
        )
        return int(re.search(r"I\s+refs:\s+([\d,]+)", result.stderr).group(1).replace(",", ""))

    return (total(requests) - total(0)) / requests


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count instructions per request with callgrind (about 2 minutes)",
    )
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--mcp",
        action="store_true",
        help="compare tools/call get_workspace on /mcp with GET /api/v1/workspace",
    )
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("The benchmark needs wrk: apt-get install wrk")
        return 2

    # The rate limiter stays on, with a limit too high to reach: its counting is measured.
    env = production_like_env(
        "bench", DJANGO_SETTINGS_MODULE="bench.settings", API_RATE_LIMIT_PER_MINUTE="1000000000"
    )
    manage(env, "migrate", "--noinput")
    email = f"bench-{int(time.time())}@example.com"
    workspace_id = manage(env, "createworkspace", "Bench", "--owner", email)
    secret = manage(
        env,
        "createapikey",
        "--workspace",
        workspace_id,
        "--user",
        email,
        "--name",
        "bench",
        "--scopes",
        "products:read",
    )
    key_id = manage(
        env,
        "shell",
        "-c",
        f"from apps.api_keys.models import ApiKey; "
        f"print(ApiKey.objects.get(user__email='{email}').pk)",
    )

    with gunicorn(env, workers=args.workers) as (base, server):
        bearer = f"Authorization: Bearer {secret}"
        if args.mcp:
            script = Path(env["GATEHOUSE_TMP"]) / "mcp_call.lua"
            script.write_text(MCP_CALL_LUA)
            targets = {
                "mcp tools/call": (f"{base}/mcp", bearer, str(script)),
                "api GET": (f"{base}/api/v1/workspace", bearer, None),
            }
        else:
            targets = {
                "authenticated": (f"{base}/api/v1/workspace", bearer, None),
                "unauthenticated": (f"{base}/bench/workspace/{key_id}", None, None),
            }
        for url, header, script_path in targets.values():  # warm up: connections, imports
            wrk(url, 2, args.connections, header, script_path)
        results: dict[str, list[dict[str, float]]] = {name: [] for name in targets}
        order = list(targets)
        for _ in range(args.rounds):
            # ABBA order: a slow drift of the machine weighs on both endpoints alike.
            for name in order:
                url, header, script_path = targets[name]
                cpu_before = server_cpu_seconds(server.pid)
                run = wrk(url, args.seconds, args.connections, header, script_path)
                run["cpu_us"] = (
                    (server_cpu_seconds(server.pid) - cpu_before) / run["requests"] * 1e6
                )
                results[name].append(run)
            order.reverse()

    database = env["DATABASE_URL"].split(":", 1)[0]
    print(
        f"\n{database}, gunicorn {args.workers} sync workers, wrk 1 thread "
        f"{args.connections} connections, {args.rounds} rounds of {args.seconds}s (medians)"
    )
    print(f"{'endpoint':<18}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}{'server CPU us/req':>20}")
    summary = {}
    for name, runs in results.items():
        metrics = ("rps", "p50", "p99", "cpu_us")
        summary[name] = {m: statistics.median(r[m] for r in runs) for m in metrics}
        s = summary[name]
        print(f"{name:<18}{s['rps']:>10.0f}{s['p50']:>10.2f}{s['p99']:>10.2f}{s['cpu_us']:>20.0f}")
    # Each round's pair ran back to back; the median of their ratios resists the machine's noise.
    first, second = targets
    ratios = [a["rps"] / b["rps"] for a, b in zip(results[first], results[second], strict=True)]
    print(
        f"ratio {first} / {second}: {statistics.median(ratios):.3f} median of "
        f"{len(ratios)} rounds (min {min(ratios):.3f}, max {max(ratios):.3f})"
    )
    # Throughput on a shared 2-core VM swings by +-20% between identical runs; the server's own
    # CPU time per request does not count time stolen by neighbours, so it shows the real cost.
    cpu_ratio = summary[second]["cpu_us"] / summary[first]["cpu_us"]
    print(f"ratio of server CPU per request, {second} / {first}: {cpu_ratio:.3f}")
    if args.instructions:
        if shutil.which("valgrind") is None:
            print("--instructions needs valgrind: apt-get install valgrind")
            return 2
        auth = instructions_per_request("auth")
        other = instructions_per_request("mcp" if args.mcp else "plain")
        name = "MCP tools/call" if args.mcp else "unauthenticated"
        # As the throughput ratios above: MCP's against the API's, the API's against plain.
        ratio = auth / other if args.mcp else other / auth
        print(
            f"instructions per request (callgrind, in process): authenticated {auth:,.0f}, "
            f"{name} {other:,.0f}, ratio {ratio:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
