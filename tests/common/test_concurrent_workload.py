"""A concurrent workload against live servers (issue 49): two gunicorns of two workers each and
a task worker on PostgreSQL (through PgBouncer in CI's PgBouncer run), two audit streams and a
webhook endpoint delivering to a live receiver. Eight clients create, roll, narrow, revoke and
PATCH for a minute (GATEHOUSE_WORKLOAD_SECONDS), half on each server. Then: no 500, every
revoke that answered is refused on both servers, and every audit event was streamed or waits
in each stream's outbox, once."""

import json
import os
import random
import threading
import time
from collections import Counter
from datetime import timedelta

import pytest
import requests

from apps.api.scopes import EVERY_SCOPE
from apps.api_keys.models import ApiKey
from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.audit_streams.models import AuditStream, AuditStreamItem
from apps.audit_streams.services import stream_create
from apps.webhooks.services import endpoint_create
from tests.factories import WorkspaceFactory, make_key, owner_of
from tests.jobs.test_workers import Worker, _database_env
from tests.operations.live import gunicorn
from tests.webhooks.receiver import receiver

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
SECONDS = float(os.environ.get("GATEHOUSE_WORKLOAD_SECONDS", "60"))
CLIENTS = 8


def test_eight_clients_for_a_minute_answer_no_500_lose_no_revoke_and_miss_no_event(tmp_path):
    workspace = WorkspaceFactory(name="Workload")
    owner = owner_of(workspace)
    manager = make_key(user=owner, scopes=EVERY_SCOPE, expires_in=None).secret
    targets = [
        make_key(user=owner, scopes=["pages:read", "pages:write"], expires_in=timedelta(days=30))
        .key.pk
        for _ in range(100)
    ]  # fmt: skip
    env = {**_database_env(), "DEBUG": "true", "LOG_LEVEL": "WARNING", "HOME": str(tmp_path)}
    env.pop("REDIS_URL", None)
    env["WEBHOOKS_ALLOW_PRIVATE"] = "true"
    # Not a test of the limiter: at today's speed eight clients send the manager's key past
    # 1,000 requests a minute, and the revokes checked after the workload were then 429s.
    env["API_RATE_LIMIT_PER_MINUTE"] = "1000000"

    with (
        receiver() as siem,
        receiver() as hooks,
        gunicorn(env, tmp_path / "one.log", workers=2) as (one, _),
        gunicorn(env, tmp_path / "two.log", workers=2) as (two, _),
    ):
        streams = {}  # stream id → the last audit event before it: it takes what follows
        for n in range(2):
            before = AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first()
            made_stream = stream_create(
                workspace, kind="https", name=f"SIEM {n}", url=siem.url,
                actor=Actor.of_user(owner),
            )  # fmt: skip
            streams[made_stream.stream.pk] = before or 0
        endpoint_create(
            workspace, url=hooks.url, event_types=["key.revoked"],
            actor=Actor.of_user(owner),
        )  # fmt: skip
        worker = Worker(env, tmp_path / "worker.log")
        try:
            statuses, revoked, made = _run_clients([one, two], manager, targets)
            # A revoke answered by one server is refused by both from the next request.
            for key_id, secret in list(made.items())[:10]:
                gone = requests.delete(f"{one}/api/v1/keys/{key_id}", headers=_auth(manager))
                assert gone.status_code == 204, gone.text
                for base in (one, two):
                    answer = requests.get(f"{base}/api/v1/workspace", headers=_auth(secret))
                    assert answer.json().get("error") == "revoked-key", (base, answer.text)
        finally:
            worker_log = ""
            deadline = time.monotonic() + 20
            while AuditStreamItem.objects.exists() and time.monotonic() < deadline:
                time.sleep(0.5)
            worker_log = worker.stop()

    print("answers by change and status:", dict(sorted(statuses.items())))
    assert sum(statuses.values()) > 3 * SECONDS, "the workload hardly ran"
    assert [k for k in statuses if k[1] >= 500] == [], (statuses, worker_log[-2000:])
    assert revoked, "the mix revoked nothing"
    assert not ApiKey.objects.filter(pk__in=revoked, revoked_at__isnull=True).exists()
    events = set(AuditEvent.objects.filter(workspace=workspace).values_list("pk", flat=True))
    # Every batch line the receiver got: an event, once per stream (two streams: twice).
    streamed = Counter(
        json.loads(line)["id"]
        for hit in siem.received
        if "webhook-id" in hit.headers and hit.body.startswith(b"{")
        for line in hit.body.decode().splitlines()
        if line.strip()
    )
    delivered = 0
    for stream_id, before in streams.items():
        stream = AuditStream.objects.get(pk=stream_id)
        waiting = AuditStreamItem.objects.filter(stream_id=stream_id).count()
        assert stream.delivered_count + waiting == len({e for e in events if e > before})
        delivered += stream.delivered_count
    assert streamed and max(streamed.values()) <= len(streams), "an event streamed twice"
    assert sum(streamed.values()) >= delivered
    assert hooks.received, "no webhook was delivered"


def _auth(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def _run_clients(bases: list[str], manager: str, targets: list[int]):
    lock = threading.Lock()
    statuses: Counter[tuple[str, int]] = Counter()
    revoked: set[int] = set()
    made: dict[int, str] = {}
    stop_at = time.monotonic() + SECONDS

    def client(number: int) -> None:
        plan = random.Random(number)
        http = requests.Session()
        http.headers["Authorization"] = f"Bearer {manager}"
        base = f"{bases[number % 2]}/api/v1"
        while time.monotonic() < stop_at:
            kind = plan.choice(["create", "roll", "narrow", "revoke", "patch"])
            key_id = plan.choice(targets)
            if kind == "create":
                body = {"name": "Under load", "scopes": ["pages:read"], "expiresInDays": 30}
                answer = http.post(f"{base}/keys", json=body, timeout=30)
                if answer.status_code == 201:
                    with lock:
                        made[answer.json()["id"]] = answer.json()["secret"]
            elif kind == "roll":
                answer = http.post(
                    f"{base}/keys/{key_id}/roll", json={"graceSeconds": 0}, timeout=30
                )
            elif kind == "narrow":
                body = {"scopes": ["pages:read"]}
                answer = http.post(f"{base}/keys/{key_id}/narrow", json=body, timeout=30)
            elif kind == "revoke":
                answer = http.delete(f"{base}/keys/{key_id}", timeout=30)
                if answer.status_code == 204:
                    with lock:
                        revoked.add(key_id)
            else:
                body = {"workspaceName": f"Workload {plan.randint(0, 9)}"}
                answer = http.patch(f"{base}/workspace", json=body, timeout=30)
            with lock:
                statuses[(kind, answer.status_code)] += 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses, revoked, made
