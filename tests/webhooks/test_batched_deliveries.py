"""Deliveries under `manage.py worker`'s batching worker: a first attempt is sent before its
delivery is written and written with its task's result; it is retried on schedule, fanned out
to several endpoints, and sent again, with the same `webhook-id`, when the worker dies before
writing."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from apps.api_keys.services import api_key_revoke
from apps.audit.services import Actor
from apps.jobs.workers import LEASE, tasks_recover
from apps.webhooks.delivery import deliver_event, deliver_one
from apps.webhooks.models import WebhookAttempt, WebhookDelivery
from apps.webhooks.services import endpoint_create
from tests.conftest import batching_worker, run_batched, run_tasks
from tests.factories import make_key, owner_of

from .receiver import receiver

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def owner():
    return owner_of(email="owner@example.com")


def subscribe(owner, url: str):
    workspace = owner.memberships.get().workspace
    return endpoint_create(
        workspace, url=url, event_types=["key.revoked"], actor=Actor.of_user(owner)
    )


def revoke(owner) -> None:
    api_key_revoke(key=make_key(user=owner).key, actor=Actor.of_user(owner))


def test_a_first_attempt_is_written_with_its_task(owner):
    with receiver() as hooks:
        made = subscribe(owner, hooks.url)
        revoke(owner)
        run_batched()
        assert [p["type"] for p in hooks.verified(made.secret)] == ["key.revoked"]
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.locked_until) == ("delivered", 1, None)
    assert delivery.message_id == hooks.received[0].message_id
    assert WebhookAttempt.objects.get().response_status == 200
    assert DBTaskResult.objects.get(task_path=deliver_event.module_path).status == "SUCCESSFUL"


def test_a_failed_first_attempt_is_retried_on_schedule(owner):
    with receiver(answers=[500]) as hooks:
        subscribe(owner, hooks.url)
        revoke(owner)
        start = timezone.now()
        run_batched()
        delivery = WebhookDelivery.objects.get()
        assert (delivery.status, delivery.attempts) == ("pending", 1)
        assert timedelta(seconds=4) < delivery.next_attempt_at - start < timedelta(seconds=6)
        retry = DBTaskResult.objects.get(task_path=deliver_one.module_path)
        assert retry.status == "READY" and retry.run_after == delivery.next_attempt_at
        assert delivery.endpoint.failing_since is not None
        with time_machine.travel(start + timedelta(seconds=6), tick=False):
            run_batched()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 2)
    assert delivery.endpoint.failing_since is None
    assert [a.response_status for a in WebhookAttempt.objects.all()] == [500, 200]
    assert len({r.message_id for r in hooks.received}) == 1


def test_an_event_for_two_endpoints_fans_out_in_the_batch(owner):
    with receiver() as first, receiver() as second:
        made = [subscribe(owner, hooks.url) for hooks in (first, second)]
        revoke(owner)
        assert run_batched() == 3  # the event, then a delivery task for each endpoint
        for hooks, endpoint in zip((first, second), made, strict=True):
            assert [p["type"] for p in hooks.verified(endpoint.secret)] == ["key.revoked"]
    assert list(WebhookDelivery.objects.values_list("status", flat=True)) == ["delivered"] * 2


def test_a_worker_killed_before_writing_sends_again_with_the_same_id(owner):
    with receiver() as hooks:
        subscribe(owner, hooks.url)
        revoke(owner)
        dying = batching_worker("dying")
        dying.write_and_claim(10)
        dying.run_batch()  # sent; killed before its next write
        assert len(hooks.received) == 1 and not WebhookDelivery.objects.exists()
        task = DBTaskResult.objects.get(task_path=deliver_event.module_path)
        assert (task.status, task.worker_ids) == ("RUNNING", ["dying"])
        with time_machine.travel(timezone.now() + LEASE + timedelta(seconds=1), tick=False):
            assert tasks_recover() == 1
        run_tasks()  # any worker: the task's second run
        assert len(hooks.received) == 2
        assert hooks.received[0].message_id == hooks.received[1].message_id
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("delivered", 1)
    task.refresh_from_db()
    assert (task.status, task.worker_ids) == ("SUCCESSFUL", ["dying", "test-worker"])
