"""Deliveries through a backend terminated under the batching worker (issue 42, item 1): every
attempt that was sent is written, however often its writes run, and no task ends FAILED
because its connection was cut; on PostgreSQL directly and through PgBouncer in transaction
pooling (GATEHOUSE_PGBOUNCER)."""

import os
from unittest import mock

import psycopg
import pytest
from django.conf import settings as django_settings
from django.db import connection
from django_tasks import task
from django_tasks_db.models import DBTaskResult

from apps.api_keys.services import api_key_revoke
from apps.audit.services import Actor
from apps.jobs import batching
from apps.jobs.management.commands.worker import ResilientWorker
from apps.jobs.task_writes import after_task
from apps.webhooks.delivery import deliver_event, deliver_one
from apps.webhooks.models import WebhookAttempt, WebhookDelivery
from apps.webhooks.services import endpoint_create
from tests.factories import make_key, owner_of

from .receiver import receiver

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

TERMINATED: list[int] = []  # the backends terminate_own_backend ended


def terminate(pid: int) -> None:
    """pg_terminate_backend(pid) from a connection of its own, straight to PostgreSQL: through
    PgBouncer, to the server that scripts/start_pgbouncer.sh passes every database to."""
    db = django_settings.DATABASES["default"]
    pooled = bool(os.environ.get("GATEHOUSE_PGBOUNCER"))
    with psycopg.connect(
        host="127.0.0.1" if pooled else db["HOST"] or None,
        port=5432 if pooled else db["PORT"] or None,
        user=db["USER"],
        dbname=db["NAME"],
        password=db["PASSWORD"] or None,
        autocommit=True,
    ) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


@task(priority=-10)  # claimed after the deliveries queued before it
def terminate_own_backend() -> None:
    """Its write, in the transaction that writes the batch's results, terminates that
    transaction's backend the first time it runs."""

    def write() -> None:
        if not TERMINATED:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")  # the server this transaction holds
                TERMINATED.append(cursor.fetchone()[0])
            terminate(TERMINATED[0])

    after_task(write)


def resilient_worker() -> ResilientWorker:
    return ResilientWorker(
        queue_names=["default"],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id="w1",
        excluded_queue_names=[],
    )


def test_a_backend_terminated_while_a_batch_is_written_loses_no_delivery():
    TERMINATED.clear()
    owner = owner_of(email="owner@example.com")
    workspace = owner.memberships.get().workspace
    with receiver(answers=[500]) as hooks:  # the first attempt fails: a retry is due
        endpoint_create(
            workspace, url=hooks.url, event_types=["key.revoked"], actor=Actor.of_user(owner)
        )
        for _ in range(3):
            api_key_revoke(key=make_key(user=owner).key, actor=Actor.of_user(owner))
        terminate_own_backend.enqueue()
        worker = resilient_worker()
        with (
            mock.patch.object(batching, "close_old_connections", lambda: None),
            mock.patch("apps.jobs.management.commands.worker.BACKOFF_FIRST", 0.1),
        ):
            worker.run()
        assert len(TERMINATED) == 1  # the batch's results were being written: cut there
        assert len(hooks.received) == 3
    tasks = DBTaskResult.objects.filter(task_path=deliver_event.module_path)
    assert sorted(tasks.values_list("status", flat=True)) == ["SUCCESSFUL"] * 3
    # every attempt that was sent is written once, the failed one with its retry queued
    deliveries = WebhookDelivery.objects.order_by("status")
    assert [(d.status, d.attempts) for d in deliveries] == [
        ("delivered", 1),
        ("delivered", 1),
        ("pending", 1),
    ]
    assert {d.message_id for d in deliveries} == {r.message_id for r in hooks.received}
    assert sorted(WebhookAttempt.objects.values_list("response_status", flat=True)) == [
        200,
        200,
        500,
    ]
    retry = DBTaskResult.objects.get(task_path=deliver_one.module_path)
    assert retry.status == "READY"
    assert retry.args_kwargs["args"] == [deliveries[2].message_id]
