"""Webhook deliveries as a customer's receiver sees them: every event of a key's life arrives
once, verified with the `standardwebhooks` library; retries, a worker dying, a rolled-back
change, a rolled secret."""

from datetime import timedelta

import httpx
import pytest
import time_machine
from django.db import transaction
from django.utils import timezone
from django_tasks_db.models import DBTaskResult
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from apps.api.scopes import EVERY_SCOPE
from apps.api_keys.services import api_key_revoke
from apps.audit.services import Actor
from apps.jobs.schedule import jobs_run_due
from apps.key_expiry.notices import api_key_expiry_job
from apps.webhooks.events import EVENT_TYPES
from apps.webhooks.models import WebhookAttempt, WebhookDelivery
from apps.webhooks.services import endpoint_create, endpoint_roll_secret
from tests.conftest import run_tasks
from tests.factories import make_key, owner_of
from tests.leaks.test_reports import github, report, send  # noqa: F401 - github is a fixture

from .receiver import receiver

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def owner():
    return owner_of(email="owner@example.com")


def subscribe(owner, url: str, events=None):
    workspace = owner.memberships.get().workspace
    return endpoint_create(
        workspace, url=url, event_types=events or list(EVENT_TYPES), actor=Actor.of_user(owner)
    )


def api(live_server, secret: str, method: str, path: str, body=None) -> httpx.Response:
    return httpx.request(
        method,
        f"{live_server.url}/api/v1{path}",
        headers={"Authorization": f"Bearer {secret}"},
        json=body,
        timeout=10,
    )


def test_each_change_of_a_key_arrives_once_verified_by_a_standard_webhooks_library(
    live_server,
    owner,
    client,
    github,  # noqa: F811
):
    manager = make_key(user=owner, scopes=EVERY_SCOPE, name="Manager")
    with receiver() as hooks:
        made = subscribe(owner, hooks.url)
        created = api(
            live_server,
            manager.secret,
            "POST",
            "/keys",
            {"name": "CI", "scopes": ["pages:read", "pages:write"]},
        )
        assert created.status_code == 201
        key_id, secret = created.json()["id"], created.json()["secret"]
        rolled = api(live_server, manager.secret, "POST", f"/keys/{key_id}/roll", {})
        narrowed = api(
            live_server,
            manager.secret,
            "POST",
            f"/keys/{key_id}/narrow",
            {"scopes": ["pages:read"]},
        )
        assert rolled.status_code == 200 and narrowed.status_code == 200
        leaked = make_key(user=owner, name="Leaky")
        send(client, report(leaked.secret), github["current"])
        doomed = make_key(user=owner, name="Doomed")
        assert (
            api(live_server, manager.secret, "DELETE", f"/keys/{doomed.key.pk}").status_code == 204
        )
        expiring = make_key(user=owner, name="Short", expires_in=timedelta(days=3))
        api_key_expiry_job()
        assert hooks.received == []  # nothing is sent inside a request or a job: workers send
        run_tasks()

        payloads = hooks.verified(made.secret)
    by_type: dict[str, list[dict]] = {}
    for payload in payloads:
        by_type.setdefault(payload["type"], []).append(payload)
    counts = {kind: len(items) for kind, items in by_type.items()}
    # Each make_key is a key.created too (three of them, and the API's one).
    assert counts == {
        "key.created": 4,
        "key.rolled": 1,
        "key.narrowed": 1,
        "key.revoked": 2,  # the leaked key is revoked, then reported as leaked
        "key.leaked": 1,
        "key.expiring": 1,
    }
    assert [p["data"]["key"]["id"] for p in by_type["key.rolled"]] == [key_id]
    assert by_type["key.narrowed"][0]["data"]["key"]["scopes"] == ["pages:read"]
    assert by_type["key.leaked"][0]["data"]["key"]["hint"] == leaked.key.hint
    what_it_did = by_type["key.leaked"][0]["data"]["details"]["whatItDid"]
    assert what_it_did.endswith(f"/integrations/api/keys/{leaked.key.pk}/#blast-radius")
    assert by_type["key.expiring"][0]["data"]["key"]["name"] == expiring.key.name
    assert by_type["key.created"][0]["data"]["actor"]["type"] == "key"  # the API call
    assert {p["data"]["workspace"]["name"] for p in payloads} == {
        owner.memberships.get().workspace.name
    }
    bodies = b"".join(r.body for r in hooks.received)
    for shown_once in (secret, rolled.json()["secret"], leaked.secret, manager.secret):
        assert shown_once.encode() not in bodies
    assert len({r.message_id for r in hooks.received}) == len(hooks.received)


def test_a_receiver_failing_three_times_gets_the_event_on_the_fourth_attempt(owner):
    with receiver(answers=[500, 503, 500]) as hooks:
        made = subscribe(owner, hooks.url, ["key.revoked"])
        victim = make_key(user=owner)
        api_key_revoke(key=victim.key, actor=Actor.of_user(owner))
        start = timezone.now()
        run_tasks()
        for wait in (timedelta(seconds=5), timedelta(minutes=5), timedelta(minutes=30)):
            start += wait + timedelta(seconds=1)
            with time_machine.travel(start, tick=False):
                run_tasks()
        with time_machine.travel(start, tick=False):  # each attempt signed when it was made
            Webhook(made.secret).verify(hooks.received[-1].body, hooks.received[-1].headers)
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "delivered" and delivery.attempts == 4
    attempts = list(WebhookAttempt.objects.filter(delivery=delivery))
    assert [a.response_status for a in attempts] == [500, 503, 500, 200]
    assert [a.succeeded for a in attempts] == [False, False, False, True]
    assert attempts[0].response_body == "answered 500"
    assert len({r.message_id for r in hooks.received}) == 1 and len(hooks.received) == 4


def test_an_event_waits_while_the_receiver_and_the_worker_are_down_and_arrives_once(owner):
    with receiver() as first:
        url = first.url
        made = subscribe(owner, url, ["key.revoked"])
    # The receiver is gone: the first attempt fails and is logged.
    victim = make_key(user=owner)
    api_key_revoke(key=victim.key, actor=Actor.of_user(owner))
    run_tasks()
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "pending" and WebhookAttempt.objects.get().response_status is None
    assert "Could not connect" in WebhookAttempt.objects.get().error
    # A worker takes the retry and dies in the middle of it: its task stays "running", the
    # delivery stays held for a minute.
    retry = DBTaskResult.objects.get(status="READY")
    DBTaskResult.objects.filter(pk=retry.pk).update(status="RUNNING")
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        locked_until=timezone.now() + timedelta(seconds=60)
    )
    with receiver() as back:
        # the endpoint's URL points at the new receiver's port (a receiver back on its host)
        made.endpoint.url = back.url
        made.endpoint.save()
        with time_machine.travel(timezone.now() + timedelta(minutes=6), tick=False):
            jobs_run_due()  # the sweep finds the delivery due, not held, and queues it again
            run_tasks()
            jobs_run_due()
            run_tasks()
            payloads = back.verified(made.secret)
    assert [p["type"] for p in payloads] == ["key.revoked"]
    assert back.received[0].message_id == delivery.message_id
    assert WebhookDelivery.objects.get().status == "delivered"


def test_a_change_rolled_back_sends_nothing(owner):
    with receiver() as hooks:
        subscribe(owner, hooks.url)
        victim = make_key(user=owner)
        run_tasks()
        hooks.received.clear()
        before = (WebhookDelivery.objects.count(), DBTaskResult.objects.count())
        with pytest.raises(RuntimeError), transaction.atomic():
            api_key_revoke(key=victim.key, actor=Actor.of_user(owner))
            raise RuntimeError("the change fails after its event was queued")
        assert (WebhookDelivery.objects.count(), DBTaskResult.objects.count()) == before
        run_tasks()
        assert hooks.received == []
    victim.key.refresh_from_db()
    assert victim.key.revoked_at is None


def test_while_a_secret_rolls_both_secrets_verify_each_delivery(owner):
    with receiver() as hooks:
        made = subscribe(owner, hooks.url, ["key.revoked"])
        rolled = endpoint_roll_secret(made.endpoint, actor=Actor.of_user(owner))
        victim = make_key(user=owner)
        api_key_revoke(key=victim.key, actor=Actor.of_user(owner))
        run_tasks()
        assert len(hooks.verified(made.secret)) == 1
        assert len(hooks.verified(rolled.secret)) == 1
        assert len(hooks.received[0].headers["webhook-signature"].split(" ")) == 2
        with time_machine.travel(timezone.now() + timedelta(hours=25), tick=False):
            api_key_revoke(key=make_key(user=owner).key, actor=Actor.of_user(owner))
            run_tasks()
        assert len(hooks.received[1].headers["webhook-signature"].split(" ")) == 1
        late = hooks.received[1]
        with pytest.raises(WebhookVerificationError):
            Webhook(made.secret).verify(late.body, late.headers)


def test_a_redirect_is_not_followed_and_counts_as_a_failure(owner):
    with receiver(answers=[302]) as hooks:
        subscribe(owner, hooks.url, ["key.revoked"])
        api_key_revoke(key=make_key(user=owner).key, actor=Actor.of_user(owner))
        run_tasks()
    attempt = WebhookAttempt.objects.get()
    assert attempt.response_status == 302 and not attempt.succeeded
    assert "Redirects are not followed" in attempt.error
    assert len(hooks.received) == 1


def test_an_event_whose_fan_out_worker_died_is_sent_again(owner):
    with receiver() as first, receiver() as second:
        made = [subscribe(owner, hooks.url, ["key.revoked"]) for hooks in (first, second)]
        api_key_revoke(key=make_key(user=owner).key, actor=Actor.of_user(owner))
        # A worker takes the event's task and dies before writing its deliveries.
        fan_out = DBTaskResult.objects.get(status="READY")
        DBTaskResult.objects.filter(pk=fan_out.pk).update(
            status="RUNNING", started_at=timezone.now() - timedelta(minutes=10)
        )
        run_tasks()
        assert first.received == [] and not WebhookDelivery.objects.exists()
        jobs_run_due()  # the recovery of tasks whose worker stopped beating
        run_tasks()
        jobs_run_due(timezone.now() + timedelta(minutes=1, seconds=1))  # nothing more
        run_tasks()
        for hooks, endpoint in zip((first, second), made, strict=True):
            assert [p["type"] for p in hooks.verified(endpoint.secret)] == ["key.revoked"]
    assert first.received[0].message_id != second.received[0].message_id
    # The same task, taken back and run again to the end.
    assert DBTaskResult.objects.get(pk=fan_out.pk).status == "SUCCESSFUL"
