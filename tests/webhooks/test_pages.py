"""Settings → Webhooks as an owner uses it: add an endpoint (secret once), send a test event,
read the delivery log, redeliver, roll the secret, remove; nobody but owners gets in."""

import re

import pytest
from django.core import mail

from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.webhooks.models import WebhookDelivery, WebhookEndpoint
from apps.webhooks.services import endpoint_create, endpoint_send_test
from apps.workspaces.models import Membership
from tests.conftest import run_tasks
from tests.factories import UserFactory, WorkspaceFactory, owner_of

from .receiver import receiver

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def owner(client):
    user = owner_of(WorkspaceFactory(name="Acme"))
    client.force_login(user)
    return user


def add(client, url: str, events=("key.revoked", "key.leaked")):
    return client.post(
        "/settings/webhooks/", {"url": url, "description": "SIEM", "event_types": list(events)}
    )


def test_an_owner_adds_an_endpoint_sees_its_secret_once_and_a_test_event_arrives(client, owner):
    with receiver() as hooks:
        page = add(client, hooks.url)
        assert page.status_code == 200 and page["Cache-Control"] == "no-store"
        secret = re.search(r'data-testid="new-secret">(whsec_[^<]+)<', page.content.decode())[1]
        endpoint = WebhookEndpoint.objects.get()
        assert secret not in endpoint.secret_encrypted
        detail = client.get(f"/settings/webhooks/{endpoint.pk}/").content.decode()
        assert secret not in detail and "Nothing sent yet" in detail
        client.post(f"/settings/webhooks/{endpoint.pk}/test/")
        run_tasks()
        (ping,) = hooks.verified(secret)
    assert ping["type"] == "webhook.ping" and ping["data"]["endpoint"]["url"] == hooks.url
    log = client.get(f"/settings/webhooks/{endpoint.pk}/").content.decode()
    assert "webhook.ping" in log and "Delivered" in log and "answered 200" in log
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert "webhook.created" in actions


def test_a_failed_delivery_is_redelivered_by_hand_with_its_webhook_id(client, owner):
    with receiver(answers=[500]) as hooks:
        add(client, hooks.url)
        endpoint = WebhookEndpoint.objects.get()
        client.post(f"/settings/webhooks/{endpoint.pk}/test/")
        run_tasks()
        delivery = WebhookDelivery.objects.get()
        assert delivery.status == "pending"
        log = client.get(f"/settings/webhooks/{endpoint.pk}/").content.decode()
        assert "answered 500" in log and "next try" in log
        client.post(f"/settings/webhooks/{endpoint.pk}/deliveries/{delivery.message_id}/redeliver/")
        run_tasks()
    assert [r.message_id for r in hooks.received] == [delivery.message_id] * 2
    delivery.refresh_from_db()
    assert delivery.status == "delivered" and delivery.tries.last().manual


def test_bad_urls_are_refused_with_a_reason(client, owner, settings):
    page = add(client, "ftp://example.com/x").content.decode()
    assert "Enter a full URL starting with https://." in page
    page = add(client, "https://example.com/x", events=()).content.decode()
    assert "Choose at least one event type." in page
    settings.WEBHOOKS_ALLOW_PRIVATE = False  # production
    for url, reason in [
        ("http://127.0.0.1:8000/x", "Use https://."),
        ("https://169.254.169.254/latest/meta-data", "private or reserved"),
        ("https://10.1.2.3/hook", "private or reserved"),
    ]:
        assert reason in add(client, url).content.decode(), url
    assert not WebhookEndpoint.objects.exists()


def test_rolling_shows_a_new_secret_and_removing_ends_deliveries(client, owner):
    add(client, "https://hooks.example.com/in")
    endpoint = WebhookEndpoint.objects.get()
    rolled = client.post(f"/settings/webhooks/{endpoint.pk}/roll/").content.decode()
    assert "whsec_" in rolled and "the old secret and the new one" in rolled
    endpoint.refresh_from_db()
    assert endpoint.previous_secret_encrypted and endpoint.previous_secret_expires_at
    edit = {"url": endpoint.url, "description": "", "event_types": ["key.revoked"]}
    client.post(f"/settings/webhooks/{endpoint.pk}/", edit)  # enabled left unticked
    endpoint.refresh_from_db()
    assert endpoint.enabled is False and endpoint.event_types == ["key.revoked"]
    client.post(f"/settings/webhooks/{endpoint.pk}/remove/")
    assert not WebhookEndpoint.objects.exists()
    actions = list(AuditEvent.objects.order_by("id").values_list("action", flat=True))
    assert actions[-3:] == ["webhook.secret_rolled", "webhook.updated", "webhook.deleted"]


def test_only_owners_reach_webhooks_and_only_their_workspaces_endpoints(client, owner):
    add(client, "https://hooks.example.com/in")
    endpoint = WebhookEndpoint.objects.get()
    other = owner_of(WorkspaceFactory(name="Other"))
    client.force_login(other)
    assert client.get(f"/settings/webhooks/{endpoint.pk}/").status_code == 404
    assert client.post(f"/settings/webhooks/{endpoint.pk}/remove/").status_code == 404
    admin = UserFactory()
    Membership.objects.create(workspace=endpoint.workspace, user=admin, role="admin")
    client.force_login(admin)
    assert client.get("/settings/webhooks/").status_code == 403
    assert WebhookEndpoint.objects.filter(pk=endpoint.pk).exists()


def test_an_endpoint_failing_for_five_days_is_disabled_and_its_owners_told(client, owner):
    from datetime import timedelta

    import time_machine
    from django.utils import timezone

    with receiver(answers=[500] * 20) as hooks:
        add(client, hooks.url)
        endpoint = WebhookEndpoint.objects.get()
        start = timezone.now()
        client.post(f"/settings/webhooks/{endpoint.pk}/test/")
        run_tasks()
        moment = start
        for wait in (5, 300, 1800, 7200, 18000, 36000, 36000):
            moment += timedelta(seconds=wait + 1)
            with time_machine.travel(moment, tick=False):
                run_tasks()
        assert WebhookDelivery.objects.get().status == "failed"  # 8 attempts over ~2.5 days
        endpoint.refresh_from_db()
        assert endpoint.enabled and endpoint.failing_since is not None
        with time_machine.travel(start + timedelta(days=5, minutes=1), tick=False):
            # (the owner's session has long ended: the ping is sent as the command would)
            endpoint_send_test(endpoint, actor=Actor.of_operator("test"))
            run_tasks()
    endpoint.refresh_from_db()
    assert not endpoint.enabled and "5 days" in endpoint.disabled_reason
    assert len(hooks.received) == 9
    (notice,) = mail.outbox
    assert notice.to == [owner.email] and hooks.url in notice.body
    assert AuditEvent.objects.filter(action="webhook.disabled").count() == 1


def test_the_development_servers_own_receiver_checks_and_lists_deliveries(live_server, settings):
    settings.DEBUG = True
    workspace = WorkspaceFactory()
    made = endpoint_create(
        workspace,
        url=f"{live_server.url}/dev/webhooks/receive",
        event_types=["key.revoked"],
        actor=Actor.of_operator("test"),
    )
    endpoint_send_test(made.endpoint, actor=Actor.of_operator("test"))
    run_tasks()
    assert WebhookDelivery.objects.get().status == "delivered"
    import httpx

    page = httpx.get(f"{live_server.url}/dev/webhooks/").text
    assert "webhook.ping" in page and "signature valid" in page
    forged = httpx.post(
        f"{live_server.url}/dev/webhooks/receive",
        content=b'{"type": "key.revoked"}',
        headers={"webhook-id": "msg_1", "webhook-timestamp": "1", "webhook-signature": "v1,AAAA"},
    )
    assert forged.status_code == 400
    settings.DEBUG = False
    assert httpx.get(f"{live_server.url}/dev/webhooks/").status_code == 404


def test_a_key_used_from_a_new_network_is_an_event(owner):
    from django.test import Client as Plain

    from tests.factories import make_key

    with receiver() as hooks:
        made = add_endpoint(owner, hooks.url, ["key.new_network"])
        created = make_key(user=owner)
        for address in ("192.0.2.10", "198.51.100.7"):  # the second is a new /24
            answer = Plain(HTTP_AUTHORIZATION=f"Bearer {created.secret}", REMOTE_ADDR=address).get(
                "/api/v1/workspace"
            )
            assert answer.status_code == 200
        run_tasks()
        (event,) = hooks.verified(made.secret)
    assert event["type"] == "key.new_network"
    assert event["data"]["details"] == {"network": "198.51.100.0/24", "address": "198.51.100.7"}
    assert event["data"]["key"]["hint"] == created.key.hint


def add_endpoint(owner, url, events):
    return endpoint_create(
        owner.memberships.get().workspace, url=url, event_types=events, actor=Actor.of_user(owner)
    )


def test_a_test_event_waiting_to_be_sent_keeps_the_log_refreshing_until_it_is(client, owner):
    with receiver() as hooks:
        endpoint = add_endpoint(owner, hooks.url, ["key.revoked"]).endpoint
        answer = client.post(f"/settings/webhooks/{endpoint.pk}/test/")
        waiting = client.get(answer["Location"]).content.decode()
        assert 'id="deliveries"' in waiting and 'hx-trigger="every 2s"' in waiting
        assert 'hx-select="#deliveries"' in waiting and "Nothing sent yet" in waiting
        run_tasks()
        sent = client.get(answer["Location"]).content.decode()
    assert "hx-trigger" not in sent and "webhook.ping" in sent
    assert "hx-trigger" not in client.get(f"/settings/webhooks/{endpoint.pk}/").content.decode()


def test_the_log_shows_bodies_as_indented_json_under_a_title_larger_than_its_headings(
    client, owner
):
    with receiver() as hooks:
        endpoint = add_endpoint(owner, hooks.url, ["key.revoked"]).endpoint
        client.post(f"/settings/webhooks/{endpoint.pk}/test/")
        run_tasks()
    page = client.get(f"/settings/webhooks/{endpoint.pk}/").content.decode()
    assert '<h1 class="mono break endpoint-title">' in page
    body = page.split("Body sent:")[1].split("</pre>")[0]
    assert "{\n  &quot;type&quot;: &quot;webhook.ping&quot;,\n" in body
