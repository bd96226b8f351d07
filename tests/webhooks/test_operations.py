"""What operators see and run: `manage.py webhooks`, `/healthz` with the queue's age, the
schedule's jobs once across workers, the address guard, and two real workers sharing 1,000
deliveries on PostgreSQL."""

import os
import subprocess
import sys
import time
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
import time_machine
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command
from django.db import transaction
from django.utils import timezone

from apps.audit.services import Actor
from apps.jobs.models import ScheduledJob
from apps.jobs.schedule import jobs_run_due
from apps.jobs.tasks import run_schedule_tick, schedule_ensure, tick
from apps.webhooks.delivery import deliver_event
from apps.webhooks.events import webhook_emit
from apps.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from apps.webhooks.services import endpoint_create
from tests.conftest import run_tasks
from tests.factories import WorkspaceFactory, owner_of

from .receiver import receiver

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


def command(*args: str) -> str:
    out = StringIO()
    call_command("webhooks", *args, stdout=out)
    return out.getvalue()


def test_the_operator_command_adds_lists_and_removes_endpoints(client):
    workspace = WorkspaceFactory(name="Acme")
    owner_of(workspace)
    added = command(
        "add",
        "--workspace",
        str(workspace.pk),
        "--url",
        "https://siem.example.com/in",
        "--events",
        "key.revoked,key.leaked",
    )
    secret = added.strip().splitlines()[-1]
    assert secret.startswith("whsec_") and len(secret) > 40
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.event_types == ["key.revoked", "key.leaked"]
    WebhookAttempt.objects.create(
        delivery=WebhookDelivery.objects.create(
            endpoint=endpoint, message_id="msg_x", event_type="key.revoked", payload="{}"
        ),
        number=1,
        error="Could not connect: refused",
    )
    listing = command("list")
    assert "https://siem.example.com/in" in listing and "1 pending" in listing
    assert "last failure" in listing and "Could not connect: refused" in listing
    with pytest.raises(CommandError, match="Unknown event type: key.sold"):
        command(
            "add",
            "--workspace",
            str(workspace.pk),
            "--url",
            "https://a.example/",
            "--events",
            "key.sold",
        )
    with pytest.raises(CommandError, match="No workspace"):
        command("add", "--workspace", "nope", "--url", "https://a.example/")
    assert "Removed endpoint" in command("remove", str(endpoint.pk))
    assert command("list").strip() == "No webhook endpoints."


def test_healthz_reports_the_age_of_the_oldest_waiting_task(client):
    assert client.get("/healthz").json()["queue"]["state"] == "ok"
    start = timezone.now()
    with time_machine.travel(start - timedelta(minutes=10), tick=False):
        with transaction.atomic():
            schedule_ensure()  # a tick enqueued ten minutes ago, and no worker since
    health = client.get("/healthz").json()
    assert health["status"] == "degraded" and health["queue"]["state"] == "late"
    assert 590 <= health["queue"]["oldest_waiting_seconds"] <= 700
    run_tasks()
    assert client.get("/healthz").json()["queue"]["state"] == "ok"


def test_each_job_runs_once_per_due_time_whatever_the_number_of_workers():
    now = timezone.now()
    first = jobs_run_due(now)
    assert {
        "expiry-notices",
        "idle-keys",
        "usage-daily",
        "webhook-sweep",
        "task-results-prune",
    } <= set(first)
    assert jobs_run_due(now) == []  # another worker at the same moment: nothing left
    minute_later = jobs_run_due(now + timedelta(minutes=1, seconds=1))
    assert sorted(minute_later) == [
        "audit-stream-sweep",
        "request-log-move",
        "tasks-recover",
        "usage-move",
        "webhook-sweep",
    ]  # every minute
    assert ScheduledJob.objects.get(name="expiry-notices").next_run_at == now + timedelta(hours=1)


def test_the_tick_chain_keeps_one_link_even_when_started_twice():
    schedule_ensure()
    assert not schedule_ensure()  # one waiting already
    run_schedule_tick.enqueue()  # a second chain, say from a second deploy
    run_tasks()  # both ticks run: one claims the minute and queues the next, one stops
    from apps.jobs.queue import waiting_tasks

    assert waiting_tasks(run_schedule_tick).count() == 1
    with time_machine.travel(timezone.now() + timedelta(minutes=1, seconds=5), tick=False):
        tick()
    assert waiting_tasks(run_schedule_tick).count() == 2  # the claimed slot's next link


def test_in_production_a_name_resolving_to_a_private_address_is_never_connected(settings):
    workspace = WorkspaceFactory()
    owner = owner_of(workspace)
    with receiver() as hooks:
        made = endpoint_create(
            workspace,
            url=hooks.url.replace("127.0.0.1", "localhost"),
            event_types=["key.revoked"],
            actor=Actor.of_user(owner),
        )
        settings.WEBHOOKS_ALLOW_PRIVATE = False  # production: checked again when connecting
        with transaction.atomic():
            webhook_emit(workspace, "webhook.ping", {}, endpoints=[made.endpoint])
        run_tasks()
    attempt = WebhookAttempt.objects.get()
    assert "resolves to a private or reserved address" in attempt.error
    assert "127.0.0.1" not in attempt.error and "::1" not in attempt.error  # no DNS oracle
    assert attempt.response_status is None
    assert hooks.received == []


@pytest.mark.postgres
@pytest.mark.parametrize("command", [["db_worker"], ["worker", "--"]])  # batching: `worker`
def test_two_workers_deliver_a_thousand_events_each_exactly_once(command):
    workspace = WorkspaceFactory()
    owner = owner_of(workspace)
    with receiver() as hooks:
        made = endpoint_create(
            workspace, url=hooks.url, event_types=["key.revoked"], actor=Actor.of_user(owner)
        )
        with transaction.atomic():
            for n in range(1000):
                webhook_emit(workspace, "key.revoked", {"n": n}, endpoints=[made.endpoint])
        database = django_settings.DATABASES["default"]
        env = {
            **os.environ,
            "DATABASE_URL": f"postgres://{database['USER']}@{database['HOST'] or '127.0.0.1'}:"
            f"{database['PORT'] or 5432}/{database['NAME']}",
            "WEBHOOKS_ALLOW_PRIVATE": "1",
        }
        workers = [
            subprocess.Popen(
                [
                    sys.executable,
                    "manage.py",
                    *command,
                    "--batch",
                    "--no-startup-delay",
                    "--interval",
                    "0",
                    "--worker-id",
                    f"w{n}",
                    "--verbosity",
                    "0",
                ],
                cwd=ROOT,
                env=env,
            )
            for n in (1, 2)
        ]
        assert [w.wait(timeout=300) for w in workers] == [0, 0]
        ids = [r.message_id for r in hooks.received]
    assert len(ids) == 1000 and len(set(ids)) == 1000
    assert WebhookDelivery.objects.filter(status="delivered").count() == 1000
    from django_tasks_db.models import DBTaskResult

    events = DBTaskResult.objects.filter(task_path=deliver_event.module_path)
    ran_by = {tuple(w) for w in events.values_list("worker_ids", flat=True)}
    assert ran_by == {("w1",), ("w2",)}  # both workers took a share, no task ran twice
    assert set(events.values_list("status", flat=True)) == {"SUCCESSFUL"}


def test_a_tick_lost_with_its_worker_is_replaced_by_the_next_check():
    import threading

    from django_tasks_db.models import DBTaskResult

    from apps.jobs.management.commands.worker import keep_alive
    from apps.jobs.queue import waiting_tasks

    schedule_ensure()
    # A worker takes the tick and dies: the row stays "running", nothing is waiting.
    DBTaskResult.objects.filter(task_path=run_schedule_tick.module_path).update(status="RUNNING")
    assert not waiting_tasks(run_schedule_tick).exists()
    stop = threading.Event()
    keeper = threading.Thread(target=keep_alive, args=(stop, "w-test", 0.05))
    keeper.start()
    try:
        for _ in range(100):
            if waiting_tasks(run_schedule_tick).exists():
                break
            time.sleep(0.05)
    finally:
        stop.set()
        keeper.join()
    assert waiting_tasks(run_schedule_tick).count() == 1
