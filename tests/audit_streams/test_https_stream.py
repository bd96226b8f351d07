"""An HTTPS audit stream as a SIEM's collector sees it: batches of JSON lines verified with the
`standardwebhooks` library (not our signer), custom headers sent, and through a receiver that
fails for a while nothing lost, nothing out of order."""

import json
import time
from datetime import timedelta

import pytest
from django.db import transaction
from standardwebhooks.webhooks import Webhook

from apps.audit.models import AuditEvent
from apps.audit.services import Actor, audit_record
from apps.audit_pages.presentation import CSV_COLUMNS
from apps.audit_streams import delivery
from apps.audit_streams.models import AuditStream, AuditStreamItem
from apps.audit_streams.services import stream_create
from apps.deliveries.engine import RetrySchedule
from tests.conftest import run_tasks
from tests.factories import owner_of
from tests.webhooks.receiver import receiver

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def owner():
    return owner_of(email="owner@example.com")


@pytest.fixture
def fast_retries(monkeypatch):
    monkeypatch.setattr(delivery, "RETRIES", RetrySchedule([timedelta(seconds=0.2)], True))


def record(owner, action: str, subject: str) -> AuditEvent:
    with transaction.atomic():
        return audit_record(
            workspace=owner.memberships.get().workspace,
            action=action,
            actor=Actor.of_user(owner, "203.0.113.9"),
            subject=subject,
            data={"field": "name", "before": "Acme", "after": subject},
        )


def run_until(done, seconds: float = 60) -> None:
    """Run due tasks, as a worker would, until `done()` or the time is up."""
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "the stream did not catch up"
        run_tasks()
        time.sleep(0.1)


def test_a_failing_receiver_loses_nothing_and_gets_every_event_in_order(owner, fast_retries):
    workspace = owner.memberships.get().workspace
    with receiver(answers=[500, 500, 503, 500]) as siem:
        made = stream_create(
            workspace,
            kind="https",
            name="SIEM",
            url=siem.url,
            headers={"Authorization": "Splunk canary-token-0001"},
            actor=Actor.of_user(owner),
        )
        events = [record(owner, "settings.changed", f"Acme {n}") for n in range(25)]
        run_until(lambda: not AuditStreamItem.objects.exists())
        for _ in range(3):
            events.append(record(owner, "settings.changed", f"late {len(events)}"))
            run_until(lambda: not AuditStreamItem.objects.exists())

    hook = Webhook(made.secret)
    delivered: list[dict] = []
    statuses = [500, 500, 503, 500] + [200] * len(siem.received)
    for request, status in zip(siem.received, statuses, strict=False):
        hook.verify(request.body, request.headers, json_parse=False)  # raises if forged
        assert request.headers["authorization"] == "Splunk canary-token-0001"
        assert request.headers["content-type"] == "application/x-ndjson"
        if status == 200:
            delivered += [json.loads(line) for line in request.body.decode().splitlines()]
    # The stream's own creation comes first: it was recorded after the stream existed.
    created = AuditEvent.objects.get(action="audit_stream.created")
    assert [e["id"] for e in delivered] == [str(created.pk)] + [str(e.pk) for e in events]
    assert all(set(CSV_COLUMNS) <= set(e) for e in delivered)
    assert delivered[1]["workspace"] == {"id": str(workspace.pk), "name": workspace.name}
    assert delivered[1]["before"] == "Acme" and delivered[1]["ip"] == "203.0.113.9"
    # The failed batches were the same events, under the same webhook-id, sent again.
    first_ok = siem.received[4]
    assert siem.received[0].headers["webhook-id"] == first_ok.headers["webhook-id"]
    assert siem.received[0].body == first_ok.body
    stream = AuditStream.objects.get()
    assert stream.failures == 0 and stream.failing_since is None and stream.last_delivery_at
    assert "500" in stream.last_error and stream.delivered_count == len(delivered)
    assert "canary-token" not in stream.headers_encrypted  # stored encrypted


def test_a_filter_takes_only_its_actions_and_a_rolled_back_change_sends_nothing(owner):
    workspace = owner.memberships.get().workspace
    with receiver() as siem:
        stream_create(
            workspace,
            kind="https",
            name="Keys only",
            url=siem.url,
            events=["key.revoked"],
            actor=Actor.of_user(owner),
        )
        record(owner, "settings.changed", "not this")
        kept = record(owner, "key.revoked", "this one")
        with pytest.raises(RuntimeError), transaction.atomic():
            audit_record(
                workspace=workspace,
                action="key.revoked",
                actor=Actor.of_user(owner),
                subject="rolled back",
            )
            raise RuntimeError("the change fails after its event was recorded")
        run_until(lambda: not AuditStreamItem.objects.exists())
    lines = [json.loads(line) for r in siem.received for line in r.body.decode().splitlines()]
    assert [line["id"] for line in lines] == [str(kept.pk)]


def test_a_paused_stream_keeps_its_backlog_and_sends_it_when_resumed(owner, settings):
    workspace = owner.memberships.get().workspace
    from apps.audit_streams.services import stream_set_enabled

    with receiver() as siem:
        made = stream_create(
            workspace, kind="https", name="SIEM", url=siem.url, actor=Actor.of_user(owner)
        )
        stream_set_enabled(made.stream, False, actor=Actor.of_user(owner))
        waiting = [record(owner, "settings.changed", f"while paused {n}") for n in range(3)]
        run_tasks()
        assert not siem.received and AuditStreamItem.objects.count() == 5  # created, paused, 3
        stream_set_enabled(AuditStream.objects.get(), True, actor=Actor.of_user(owner))
        run_until(lambda: not AuditStreamItem.objects.exists())
    ids = [json.loads(line)["id"] for r in siem.received for line in r.body.decode().splitlines()]
    assert ids[2:5] == [str(e.pk) for e in waiting] and len(ids) == len(set(ids)) == 6


def test_an_event_committed_while_a_batch_is_on_its_way_is_sent_after_it(owner, monkeypatch):
    import threading

    from django.db import connection

    workspace = owner.memberships.get().workspace
    real_send = delivery.send_https
    later: list[AuditEvent] = []

    def send_while_another_change_commits(stream, batch, batch_id, now):
        if not later:  # another request's change, committed on its own connection meanwhile

            def change():
                later.append(record(owner, "settings.changed", "meanwhile"))
                connection.close()

            thread = threading.Thread(target=change)
            thread.start()
            thread.join()
        real_send(stream, batch, batch_id, now)

    monkeypatch.setattr(delivery, "send_https", send_while_another_change_commits)
    with receiver() as siem:
        stream_create(
            workspace, kind="https", name="SIEM", url=siem.url, actor=Actor.of_user(owner)
        )
        first = record(owner, "settings.changed", "first")
        run_until(lambda: not AuditStreamItem.objects.exists())
    ids = [json.loads(line)["id"] for r in siem.received for line in r.body.decode().splitlines()]
    assert ids[1:] == [str(first.pk), str(later[0].pk)]


@pytest.mark.postgres
def test_concurrent_changes_are_numbered_in_the_order_they_commit(owner):
    """The first change to record its event holds the stream's number until it commits: a
    second change waits for it, so numbers (the order sent) are the order of commits."""
    import threading

    from django.db import connection

    stream_create(
        owner.memberships.get().workspace,
        kind="https",
        name="SIEM",
        url="https://siem.example.com/in",
        actor=Actor.of_user(owner),
    )
    recorded, go = threading.Event(), threading.Event()
    commits: list[str] = []

    def first() -> None:
        with transaction.atomic():
            record_in_transaction("first")
            recorded.set()
            go.wait(10)
        commits.append("first")
        connection.close()

    def second() -> None:
        with transaction.atomic():
            record_in_transaction("second")
        commits.append("second")
        connection.close()

    def record_in_transaction(subject: str) -> None:
        audit_record(
            workspace=owner.memberships.get().workspace,
            action="settings.changed",
            actor=Actor.of_user(owner),
            subject=subject,
        )

    one, two = threading.Thread(target=first), threading.Thread(target=second)
    one.start()
    assert recorded.wait(10)
    two.start()
    two.join(1)
    assert two.is_alive() and commits == []  # the second change waits for the first's commit
    go.set()
    one.join(10)
    two.join(10)
    items = AuditStreamItem.objects.select_related("event").order_by("seq")
    assert [i.event.subject for i in items][1:] == commits == ["first", "second"]


def test_the_sweep_queues_a_stream_whose_task_was_lost_and_drops_week_old_events(owner, settings):
    from django.utils import timezone
    from django_tasks_db.models import DBTaskResult

    from apps.audit_streams.delivery import streams_sweep

    workspace = owner.memberships.get().workspace
    with receiver() as siem:
        stream_create(
            workspace, kind="https", name="SIEM", url=siem.url, actor=Actor.of_user(owner)
        )
        old = record(owner, "settings.changed", "eight days ago")
        kept = record(owner, "settings.changed", "an hour ago")
        AuditStreamItem.objects.filter(event=old).update(
            created_at=timezone.now() - timedelta(days=settings.AUDIT_STREAM_DAYS, hours=1)
        )
        DBTaskResult.objects.all().delete()  # the worker holding them died, its rows lost
        streams_sweep()
        run_tasks()
    ids = [json.loads(line)["id"] for r in siem.received for line in r.body.decode().splitlines()]
    assert ids[1:] == [str(kept.pk)] and not AuditStreamItem.objects.exists()


def test_the_batching_worker_of_manage_py_worker_sends_them_too(owner, fast_retries):
    from tests.conftest import run_batched

    workspace = owner.memberships.get().workspace
    with receiver(answers=[500]) as siem:
        stream_create(
            workspace, kind="https", name="SIEM", url=siem.url, actor=Actor.of_user(owner)
        )
        events = [record(owner, "settings.changed", f"Acme {n}") for n in range(5)]
        deadline = time.monotonic() + 60
        while AuditStreamItem.objects.exists():
            assert time.monotonic() < deadline
            run_batched()
            time.sleep(0.1)
    ids = [
        json.loads(line)["id"] for r in siem.received[1:] for line in r.body.decode().splitlines()
    ]
    assert ids[1:] == [str(e.pk) for e in events]
