"""A key with a quota, and a service account's key drawing from a shared quota, against the same
key without one, interleaved in one run (issue 52): what the quota's step in the limiter's Redis
call costs the hot path.

    .venv/bin/python bench/quota.py [--rounds 7] [--seconds 5]

Serves this tree as bench/before_after.py does (gunicorn, 2 sync workers, DEBUG off, PostgreSQL
over the local socket with persistent connections, the limiter and the request log on) with
Redis (REDIS_URL, default redis://127.0.0.1:6379/15), and two keys of the same scopes, one with
a quota no run can spend (10⁹ a month). Each round measures both with wrk in a rotated order:
GET /api/v1/workspace. It prints the medians of each round's ratio (throughput, and the
server's CPU time per request from /proc).
"""

import argparse
import os
import statistics
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from auth_overhead import server_cpu_seconds, wrk  # noqa: E402
from before_after import prepare, run_manage, serve  # noqa: E402

MAKE_KEY = """
from apps.api_keys.models import ApiKey
from apps.api_keys.services import api_key_create
from apps.common.quota_periods import Quota
first = ApiKey.objects.select_related("workspace", "user").get()
made = api_key_create(
    workspace=first.workspace, user=first.user, name="bench quota", scopes=first.scopes,
    expires_at=first.expires_at, quota=Quota(1_000_000_000, "month"),
)
print(made.secret)
"""
MAKE_SHARED_KEY = """
from apps.api_keys.models import ApiKey
from apps.audit.services import Actor
from apps.service_accounts.services import (
    service_account_create, service_account_key_create, service_account_update,
)
first = ApiKey.objects.select_related("workspace", "user").order_by("pk").first()
actor = Actor.of_user(first.user)
account = service_account_create(workspace=first.workspace, name="bench pool", actor=actor)
service_account_update(
    account=account, changes={"quotaShared": {"requests": 10**9, "period": "month"}}, actor=actor
)
made = service_account_key_create(
    account=account, name="bench shared", scopes=["pages:read"], expires_at=None, actor=actor
)
print(made.secret)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/15")
    args = parser.parse_args()
    env, plain_secret, _key_id = prepare(ROOT, "quota")
    env["REDIS_URL"] = args.redis
    quota_secret = run_manage(ROOT, env, "shell", "-c", MAKE_KEY)
    shared_secret = run_manage(ROOT, env, "shell", "-c", MAKE_SHARED_KEY)
    with ExitStack() as stack:
        base, master = serve(stack, ROOT, env)
        targets = {
            "without quota": f"Authorization: Bearer {plain_secret}",
            "with quota": f"Authorization: Bearer {quota_secret}",
            "shared quota": f"Authorization: Bearer {shared_secret}",
        }
        url = f"{base}/api/v1/workspace"
        for header in targets.values():
            wrk(url, 2, args.connections, header, None)
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in targets}
        order = list(targets)
        for round_ in range(args.rounds):
            for name in order[round_ % 3 :] + order[: round_ % 3]:
                cpu = server_cpu_seconds(master)
                run = wrk(url, args.seconds, args.connections, targets[name], None)
                run["cpu_us"] = (server_cpu_seconds(master) - cpu) / run["requests"] * 1e6
                runs[name].append(run)
            print(f"round {round_ + 1}: load average {os.getloadavg()[0]:.1f}", flush=True)

    def ratio(metric: str, name: str = "with quota") -> float:
        pairs = zip(runs[name], runs["without quota"], strict=True)
        return statistics.median(a[metric] / b[metric] for a, b in pairs)

    print(f"\n{args.rounds} rounds of {args.seconds} s, {args.connections} connections")
    for name, measured in runs.items():
        rps = statistics.median(r["rps"] for r in measured)
        cpu = statistics.median(r["cpu_us"] for r in measured)
        print(f"  {name:<14} {rps:>8.0f} req/s   {cpu:>6.0f} us CPU/req")
    for name in ("with quota", "shared quota"):
        print(
            f"{name} ÷ without: throughput {ratio('rps', name):.3f}, "
            f"server CPU a request {ratio('cpu_us', name):.3f}"
        )
    subprocess.run(
        ["dropdb", "--if-exists", "-h", "127.0.0.1", "-U", "postgres", "gatehouse_ba_quota"]
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
