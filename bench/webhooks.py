"""How fast webhook events get out, and what they cost the request that causes them.

    .venv/bin/python bench/webhooks.py [--database sqlite|postgres] [--events 2000]
        [--answer-ms 0] [--throughput-only]

On a fresh database (a SQLite file, or a PostgreSQL database over the local socket), with a
receiver on loopback (a threaded http.server in this process that records each arrival):

1. throughput: `--events` deliveries queued at once, then `manage.py worker -- --batch` run by
   one worker one delivery at a time (TASK_THREADS=1), then side by side (TASK_THREADS=8, 4 to
   an endpoint; the receiver's endpoints are 10, the events spread over them), then by two
   workers at the same time; events delivered per second (wall time of the workers, from start
   to the last one's exit). `--answer-ms` makes the receiver take that long to answer;
2. latency: two workers polling (`--interval 0.1`, and the default 1 s), 200 keys revoked one
   every 25 ms; the time from each revocation's commit to its event's arrival, p50 and p99;
3. the revoking request: DELETE /api/v1/keys/{id} in-process (Django's test client, DEBUG
   off), 200 each in workspaces with no endpoint, one, and ten subscribed endpoints,
   interleaved in rounds of 20; median and p99 of each.
"""

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG_DATABASE = "gatehouse_webhooks_bench"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


class Receiver:
    """Records (webhook-id, the key id in the body, arrival time) of every POST."""

    def __init__(self, answer_ms: int = 0) -> None:
        self.arrivals: dict[str, tuple[int | None, float]] = {}
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                arrived = time.time()
                key_id = None
                marker = b'"key":{"id":'
                if marker in body:
                    key_id = int(body.split(marker, 1)[1].split(b",", 1)[0])
                with receiver.lock:
                    receiver.arrivals[self.headers["webhook-id"]] = (key_id, arrived)
                time.sleep(answer_ms / 1000)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/in"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def setup_database(kind: str) -> dict[str, str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "false"}
    env.update(SECRET_KEY=secrets.token_urlsafe(48), API_KEY_HASH_SECRET=secrets.token_urlsafe(48))
    env.update(WEBHOOKS_ALLOW_PRIVATE="1", ALLOWED_HOSTS="testserver,127.0.0.1")
    if kind == "postgres":
        subprocess.run(["dropdb", "--if-exists", "-h", "127.0.0.1", "-U", "postgres", PG_DATABASE])
        subprocess.run(["createdb", "-h", "127.0.0.1", "-U", "postgres", PG_DATABASE], check=True)
        env["DATABASE_URL"] = f"postgres://postgres@/{PG_DATABASE}?host=/var/run/postgresql"
    else:
        path = Path(tempfile.mkdtemp(prefix="gatehouse-webhooks-")) / "bench.sqlite3"
        env["DATABASE_URL"] = f"sqlite:///{path}"
    os.environ.update(env)
    return env


def workers(env: dict[str, str], count: int, *extra: str) -> list[subprocess.Popen[bytes]]:
    command = [sys.executable, "manage.py", "worker", "--", "--no-startup-delay", "--no-reload"]
    return [
        subprocess.Popen(
            [*command, "--worker-id", f"bench{n}", "--verbosity", "0", *extra], cwd=ROOT, env=env
        )
        for n in range(count)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--answer-ms", type=int, default=0, help="the receiver's answer time")
    parser.add_argument("--throughput-only", action="store_true")
    args = parser.parse_args()
    env = setup_database(args.database)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    settings.JOBS_START_ON_MIGRATE = False
    call_command("migrate", verbosity=0)
    receiver = Receiver(args.answer_ms)
    print(f"database: {args.database}, the receiver answers in {args.answer_ms} ms")
    throughput(env, receiver, args.events)
    if args.throughput_only:
        return 0
    for interval in ("0.1", "1"):
        latency(env, receiver, interval)
    revoke_request(receiver)
    return 0


def _workspace_with_endpoints(receiver: Receiver, count: int, events: list[str]):
    from apps.audit.services import Actor
    from apps.webhooks.services import endpoint_create
    from tests.factories import owner_of

    owner = owner_of()
    workspace = owner.memberships.get().workspace
    endpoints = [
        endpoint_create(
            workspace, url=receiver.url, event_types=events, actor=Actor.of_user(owner)
        ).endpoint
        for _ in range(count)
    ]
    return owner, workspace, endpoints


def throughput(env: dict[str, str], receiver: Receiver, events: int) -> None:
    from django.db import transaction

    from apps.webhooks.events import webhook_emit

    _, workspace, endpoints = _workspace_with_endpoints(receiver, 10, ["key.revoked"])
    for count, threads in ((1, "1"), (1, "8"), (2, "8")):
        receiver.arrivals.clear()
        with transaction.atomic():
            for n in range(events):
                endpoint = endpoints[n % len(endpoints)]
                webhook_emit(workspace, "key.revoked", {"n": n}, endpoints=[endpoint])
        started = time.perf_counter()
        for worker in workers(
            {**env, "TASK_THREADS": threads}, count, "--batch", "--interval", "0"
        ):
            worker.wait()
        elapsed = time.perf_counter() - started
        assert len(receiver.arrivals) == events, len(receiver.arrivals)
        rate = events / elapsed
        print(
            f"{count} worker(s), TASK_THREADS={threads}: {events} events in {elapsed:.1f} s, "
            f"{rate:.0f} events/s"
        )


def latency(env: dict[str, str], receiver: Receiver, interval: str) -> None:
    from apps.api_keys.services import api_key_revoke
    from apps.audit.services import Actor
    from tests.factories import make_key

    owner, _, _ = _workspace_with_endpoints(receiver, 1, ["key.revoked"])
    keys = [make_key(user=owner).key for _ in range(200)]
    receiver.arrivals.clear()
    running = workers(env, 2, "--interval", interval)
    time.sleep(2)  # both polling
    revoked_at = {}
    for key in keys:
        api_key_revoke(key=key, actor=Actor.of_user(owner))
        revoked_at[key.pk] = time.time()
        time.sleep(0.025)
    deadline = time.time() + 30
    while len(receiver.arrivals) < len(keys) and time.time() < deadline:
        time.sleep(0.1)
    for worker in running:
        worker.terminate()
        worker.wait()
    waits = [
        (arrived - revoked_at[key_id]) * 1000
        for key_id, arrived in receiver.arrivals.values()
        if key_id in revoked_at
    ]
    print(
        f"revocation → arrival, 2 workers polling every {interval} s: {len(waits)} events, "
        f"p50 {statistics.median(waits):.0f} ms, p99 {percentile(waits, 0.99):.0f} ms"
    )


def revoke_request(receiver: Receiver) -> None:
    from django.test import Client

    from apps.api.scopes import EVERY_SCOPE
    from apps.webhooks.events import EVENT_TYPES
    from tests.factories import make_key

    owners = {
        name: _workspace_with_endpoints(receiver, count, list(EVENT_TYPES))[0]
        for name, count in (("no endpoint", 0), ("one endpoint", 1), ("ten endpoints", 10))
    }
    times: dict[str, list[float]] = {name: [] for name in owners}
    managers = {name: make_key(user=o, scopes=EVERY_SCOPE).secret for name, o in owners.items()}
    client = Client()
    for _round in range(10):
        for name, owner in owners.items():
            targets = [make_key(user=owner).key.pk for _ in range(20)]
            for target in targets:
                started = time.perf_counter()
                answer = client.delete(
                    f"/api/v1/keys/{target}",
                    secure=True,
                    HTTP_AUTHORIZATION=f"Bearer {managers[name]}",
                )
                times[name].append((time.perf_counter() - started) * 1000)
                assert answer.status_code == 204, answer.content
    for name, values in times.items():
        print(
            f"DELETE /api/v1/keys/{{id}}, {name}: median {statistics.median(values):.2f} ms, "
            f"p99 {percentile(values, 0.99):.2f} ms ({len(values)} requests)"
        )


if __name__ == "__main__":
    sys.exit(main())
