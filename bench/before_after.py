"""Two revisions of Gatehouse side by side in one interleaved run, with the bare view and the
framework-free floor beside each round: what a change did to the hot path.

    .venv/bin/python bench/before_after.py BEFORE_REV [--rounds 5] [--seconds 5]

Checks BEFORE_REV out into var/bench-before (a detached git worktree), and serves it and this
tree the way bench/peers.py serves Gatehouse (gunicorn, 2 sync workers, DEBUG off, PostgreSQL
over the local socket with persistent connections, the limiter and the request log on), each on
its own database with its own key, plus `../shared/bench/floor/floorapp.py` on this tree's
database. Each round measures, in a rotated order: per revision the authenticated
GET /api/v1/workspace, the same record from a bare Django view in the same process
(bench/urls.py), and `tools/call get_workspace` on /mcp; and the floor. It prints the medians of
each round's ratios (throughput, and the server's CPU time per request from /proc, which a busy
machine disturbs far less) and the load average.
"""

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLOOR_APP = ROOT.parent / "shared" / "bench" / "floor"
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "bench"))
from auth_overhead import MCP_CALL_LUA, server_cpu_seconds, wrk  # noqa: E402
from local_server import BIN, free_port, production_like_env  # noqa: E402


def run_manage(root: Path, env: dict, *args: str) -> str:
    out = subprocess.run(
        [str(BIN / "python"), "manage.py", *args],
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return out.splitlines()[-1] if out else ""


def prepare(root: Path, name: str) -> tuple[dict, str, str]:
    """A fresh database for the tree at `root`, migrated, with one key; (env, secret, key id)."""
    database = f"gatehouse_ba_{name}"
    subprocess.run(["dropdb", "--if-exists", "-h", "127.0.0.1", "-U", "postgres", database])
    subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", database], check=True)
    env = production_like_env(
        name,
        DJANGO_SETTINGS_MODULE="bench.settings",
        DATABASE_URL=f"postgres://postgres@/{database}?host=/var/run/postgresql",
        DATABASE_CONN_MAX_AGE="600",
        API_RATE_LIMIT_PER_MINUTE="1000000000",
    )
    run_manage(root, env, "migrate", "--noinput")
    run_manage(root, env, "collectstatic", "--noinput")
    workspace = run_manage(root, env, "createworkspace", "Bench", "--owner", "bench@example.com")
    secret = run_manage(
        root,
        env,
        "createapikey",
        "--workspace",
        workspace,
        "--user",
        "bench@example.com",
        "--name",
        "bench",
        "--scopes",
        "products:read",
    )
    key_id = run_manage(
        root,
        env,
        "shell",
        "-c",
        "from apps.api_keys.models import ApiKey; print(ApiKey.objects.get().pk)",
    )
    return env, secret, key_id


def serve(stack: ExitStack, root: Path, env: dict, app: str = "config.wsgi") -> tuple[str, int]:
    """Serve `app` from `root` with gunicorn (2 sync workers); (base URL, master pid)."""
    port = free_port()
    server = subprocess.Popen(
        [
            str(BIN / "gunicorn"),
            app,
            "-b",
            f"127.0.0.1:{port}",
            "-w",
            "2",
            "--log-level",
            "warning",
            "--chdir",
            str(root),
        ],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    stack.callback(lambda: (server.terminate(), server.wait(20)))
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    return f"http://127.0.0.1:{port}", server.pid


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=8)
    args = parser.parse_args()
    before_root = ROOT / "var" / "bench-before"
    if before_root.exists():
        subprocess.run(["git", "worktree", "remove", "--force", str(before_root)], cwd=ROOT)
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(before_root), args.before],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    lua = ROOT / "var" / "bench-mcp.lua"
    lua.write_text(MCP_CALL_LUA)
    trees = {"before": before_root, "after": ROOT}
    targets: dict[str, tuple[str, str | None, str | None]] = {}
    masters: dict[str, int] = {}
    with ExitStack() as stack:
        for name, root in trees.items():
            env, secret, key_id = prepare(root, name)
            base, masters[name] = serve(stack, root, env)
            bearer = f"Authorization: Bearer {secret}"
            targets[f"{name} api"] = (f"{base}/api/v1/workspace", bearer, None)
            targets[f"{name} bare"] = (f"{base}/bench/workspace/{key_id}", None, None)
            targets[f"{name} mcp"] = (f"{base}/mcp", bearer, str(lua))
            if name == "after":
                floor_env = dict(
                    env,
                    FLOOR_DSN="host=/var/run/postgresql user=postgres dbname=gatehouse_ba_after",
                )
                floor, _pid = serve(stack, FLOOR_APP, floor_env, app="floorapp:app")
                targets["floor"] = (f"{floor}/", bearer, None)
        for url, header, script in targets.values():
            wrk(url, 2, args.connections, header, script)
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in targets}
        order = list(targets)
        for round_ in range(args.rounds):
            for name in order[round_ % len(order) :] + order[: round_ % len(order)]:
                url, header, script = targets[name]
                master = masters.get(name.split()[0])
                cpu = server_cpu_seconds(master) if master else 0.0
                run = wrk(url, args.seconds, args.connections, header, script)
                if master:
                    run["cpu_us"] = (server_cpu_seconds(master) - cpu) / run["requests"] * 1e6
                runs[name].append(run)
            print(f"round {round_ + 1}: load average {os.getloadavg()[0]:.1f}", flush=True)

    def ratio(a: str, b: str, metric: str = "rps") -> float:
        return statistics.median(
            x[metric] / y[metric] for x, y in zip(runs[a], runs[b], strict=True)
        )

    print(
        f"\n{args.rounds} rounds of {args.seconds} s, wrk 1 thread {args.connections} "
        f"connections, load average now {os.getloadavg()[0]:.1f}"
    )
    for name, measured in runs.items():
        rps = statistics.median(r["rps"] for r in measured)
        cpu = statistics.median(r.get("cpu_us", 0.0) for r in measured)
        print(f"  {name:<12} {rps:>8.0f} req/s   {cpu:>6.0f} us CPU/req")
    for name in trees:
        print(
            f"{name}: api ÷ bare view {ratio(f'{name} api', f'{name} bare'):.2f} "
            f"(CPU {ratio(f'{name} bare', f'{name} api', 'cpu_us'):.2f}); "
            f"api ÷ floor {ratio(f'{name} api', 'floor'):.2f}; "
            f"mcp ÷ api {ratio(f'{name} mcp', f'{name} api'):.2f} "
            f"(CPU {ratio(f'{name} api', f'{name} mcp', 'cpu_us'):.2f})"
        )
    subprocess.run(["git", "worktree", "remove", "--force", str(before_root)], cwd=ROOT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
