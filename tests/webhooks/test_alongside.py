"""Deliveries side by side (issue 53, item 8): under `manage.py worker`'s batching worker the
attempts of a batch run in threads, at most TASK_THREADS_PER_KEY to one endpoint, so a slow
receiver holds a few threads and the other endpoints' deliveries go on beside it. Each delivery
is still sent once, signed, and written with its attempt."""

import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from apps.audit.services import Actor
from apps.webhooks.delivery import endpoint_waited_on
from apps.webhooks.models import WebhookAttempt, WebhookDelivery
from apps.webhooks.services import endpoint_create
from apps.workspaces.models import Workspace
from tests.conftest import run_batched
from tests.factories import owner_of

pytestmark = pytest.mark.django_db(transaction=True)
HOLD = 0.4  # each answer takes this long


class SlowReceiver:
    """Two endpoints' paths on one loopback server; each answer waits HOLD seconds. Records the
    most requests in flight at once, per path and in all."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_flight: Counter[str] = Counter()
        self.most: Counter[str] = Counter()
        self.received: Counter[str] = Counter()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                with receiver.lock:
                    receiver.in_flight[self.path] += 1
                    receiver.in_flight["all"] += 1
                    for name in (self.path, "all"):
                        receiver.most[name] = max(receiver.most[name], receiver.in_flight[name])
                time.sleep(HOLD)
                with receiver.lock:
                    receiver.in_flight[self.path] -= 1
                    receiver.in_flight["all"] -= 1
                    receiver.received[self.path] += 1
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"


@pytest.fixture
def slow():
    receiver = SlowReceiver()
    yield receiver
    receiver.server.shutdown()
    receiver.server.server_close()


def test_attempts_run_side_by_side_with_a_cap_per_endpoint(slow, settings):
    settings.TASK_THREADS, settings.TASK_THREADS_PER_KEY = 8, 3
    owner = owner_of(email="owner@example.com")
    workspace = owner.memberships.get().workspace
    by_owner = Actor.of_user(owner)
    busy = endpoint_create(
        workspace, url=f"{slow.url}/busy", event_types=["workspace.updated"], actor=by_owner
    )
    # The second endpoint is another workspace's: each event then goes to one endpoint alone.
    other = owner_of(email="other@example.com")
    quiet = endpoint_create(
        other.memberships.get().workspace, url=f"{slow.url}/quiet",
        event_types=["workspace.updated"], actor=Actor.of_user(other),
    )  # fmt: skip
    from apps.workspaces.services import workspace_update

    for n in range(12):  # interleaved in the queue: busy, busy, quiet, busy, busy, quiet, ...
        target, actor = (other, Actor.of_user(other)) if n % 3 == 2 else (owner, by_owner)
        space = target.memberships.get().workspace
        workspace_update(workspace=space, changes={"name": f"Renamed {n}"}, actor=actor)
    started = time.monotonic()
    run_batched()
    took = time.monotonic() - started
    assert slow.received == {"/busy": 8, "/quiet": 4}
    assert slow.most["/busy"] == 3  # the cap reached, never passed
    assert slow.most["all"] >= 4  # the quiet endpoint's beside the busy one's
    assert took < 12 * HOLD  # fewer than one at a time would take
    assert WebhookDelivery.objects.filter(status="delivered").count() == 12
    assert WebhookAttempt.objects.count() == 12
    assert {d.endpoint_id for d in WebhookDelivery.objects.all()} == {
        busy.endpoint.pk,
        quiet.endpoint.pk,
    }
    assert Workspace.objects.get(pk=workspace.pk).name == "Renamed 10"


def test_one_at_a_time_when_task_threads_is_one(slow, settings):
    settings.TASK_THREADS = 1
    owner = owner_of(email="owner@example.com")
    workspace = owner.memberships.get().workspace
    endpoint_create(
        workspace, url=f"{slow.url}/busy", event_types=["workspace.updated"],
        actor=Actor.of_user(owner),
    )  # fmt: skip
    from apps.workspaces.services import workspace_update

    for n in range(3):
        workspace_update(
            workspace=workspace, changes={"name": f"Renamed {n}"}, actor=Actor.of_user(owner)
        )
    run_batched()
    assert slow.received == {"/busy": 3} and slow.most["all"] == 1


def test_what_a_delivery_task_waits_on_is_read_from_its_arguments():
    assert endpoint_waited_on(["msg_evt_abc_42"], {}) == "endpoint:42"
    assert endpoint_waited_on(["msg_evt_abc_42", True], {}) == "endpoint:42"
    assert endpoint_waited_on(["evt_abc", "key.revoked", "{}", [7], "2026-12-02"], {}) == (
        "endpoint:7"
    )
    assert endpoint_waited_on(["evt_abc", "key.revoked", "{}", [7, 8], "2026-12-02"], {}) == (
        "fan-out"
    )


@pytest.mark.parametrize("name, value", [("TASK_THREADS", "0"), ("TASK_THREADS_PER_KEY", "65")])
def test_a_worker_refuses_to_start_with_threads_out_of_range(name, value):
    import os
    import subprocess
    import sys

    ran = subprocess.run(
        [sys.executable, "manage.py", "check"],
        env={**os.environ, name: value},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode != 0
    assert f"{name} must be from 1 to 64, not {value}." in ran.stderr
