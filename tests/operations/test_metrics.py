"""/metrics in one process: who may read it, what a request adds, what never becomes a label."""

import re

import pytest
from django.test import override_settings
from django.utils import timezone

from apps.jobs.models import WorkerHeartbeat
from tests.factories import make_key

pytestmark = pytest.mark.django_db


def sample(text: str, name: str, **labels: str) -> float:
    """The sum of the series of `name` with these labels in a scrape (0 when absent): other
    labels (a task's name, say) are added up, as PromQL's sum() would."""
    total = 0.0
    for line in text.splitlines():
        found = re.match(r"^(\w+)(?:\{(.*)\})? (\S+)$", line)
        if not found or found.group(1) != name:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', found.group(2) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(found.group(3))
    return total


def scrape(client, **extra) -> str:
    response = client.get("/metrics", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    return response.content.decode()


def test_metrics_are_served_to_loopback_and_refused_elsewhere(client):
    assert client.get("/metrics").status_code == 200
    refused = client.get("/metrics", REMOTE_ADDR="203.0.113.9")
    assert refused.status_code == 403 and refused.json()["error"] == "forbidden"


@override_settings(METRICS_TOKEN="s3cret-token", METRICS_ALLOWED_NETWORKS=["10.0.0.0/8"])
def test_a_scraper_elsewhere_brings_the_token(client):
    assert client.get("/metrics").status_code == 403  # loopback is no longer listed
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    wrong = client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer nope")
    assert wrong.status_code == 403
    scrape(client, REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer s3cret-token")
    scrape(client, REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="bearer s3cret-token")
    scrape(client, REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="BEARER  s3cret-token")


def test_api_requests_refusals_and_lookups_are_counted_without_the_key(client):
    created = make_key(name="Payroll robot")
    before = scrape(client)
    auth = {"HTTP_AUTHORIZATION": f"Bearer {created.secret}"}
    for _ in range(3):
        assert client.get("/api/v1/workspace", **auth).status_code == 200
    assert client.get("/api/v1/workspace").status_code == 401
    after = scrape(client)

    def delta(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    ok = {"door": "api", "operation": "get_workspace"}
    assert delta("gatehouse_requests_total", status="2xx", **ok) == 3
    assert delta("gatehouse_requests_total", status="4xx", **ok) == 1
    assert delta("gatehouse_refusals_total", door="api", error="missing-key") == 1
    assert delta("gatehouse_key_lookups_total", result="active") == 3
    assert delta("gatehouse_key_lookups_total", result="missing") == 1
    assert delta("gatehouse_request_duration_seconds_count", **ok) == 4
    key = created.key
    ours = "\n".join(line for line in after.splitlines() if line.startswith("gatehouse_"))
    values = set(re.findall(r'="([^"]*)"', ours))
    assert not values & {str(key.pk), key.name, key.hint, str(key.workspace_id)}
    assert key.name not in after and key.hint not in after
    assert delta("gatehouse_workspace_requests_total") == 0  # not opted in


def test_workspace_labels_only_when_the_operator_opts_in(client):
    """Without METRICS_WORKSPACE_LABELS no series names the workspace; with it, one does."""
    created = make_key()
    workspace = str(created.key.workspace_id)
    client.get("/api/v1/workspace", HTTP_AUTHORIZATION=f"Bearer {created.secret}")
    text = scrape(client)
    assert workspace not in text
    assert not sample(text, "gatehouse_workspace_requests_total", workspace=workspace)
    with override_settings(METRICS_WORKSPACE_LABELS=True):
        client.get("/api/v1/workspace", HTTP_AUTHORIZATION=f"Bearer {created.secret}")
        text = scrape(client)
    assert sample(text, "gatehouse_workspace_requests_total", workspace=workspace) == 1


def test_dashboard_requests_are_counted_by_route_name(client):
    before = sample(scrape(client), "gatehouse_requests_total", door="dashboard")
    client.get("/sign-in/")
    text = scrape(client)
    assert sample(text, "gatehouse_requests_total", door="dashboard", operation="account_login")
    assert sample(text, "gatehouse_requests_total", door="dashboard") >= before


def test_the_queue_and_its_workers_are_read_at_scrape_time(client):
    from apps.webhooks.delivery import deliver_one  # any task: its row waits in the queue

    text = scrape(client)
    assert sample(text, "gatehouse_database_up") == 1
    depth = sample(text, "gatehouse_task_queue_depth")
    deliver_one.enqueue("msg_nothing")
    WorkerHeartbeat.objects.create(worker_id="w1", seen_at=timezone.now())
    text = scrape(client)
    assert sample(text, "gatehouse_task_queue_depth") == depth + 1
    assert sample(text, "gatehouse_task_workers") == 1
    assert "gatehouse_task_worker_heartbeat_age_seconds" in text
    assert "gatehouse_redis_up" not in text  # Redis not configured


def test_audit_streams_backlog_and_lag_are_read_at_scrape_time(client):
    from datetime import timedelta

    from apps.audit.services import Actor, audit_record
    from apps.audit_streams.models import AuditStreamItem
    from apps.audit_streams.services import stream_create
    from tests.factories import owner_of

    owner = owner_of()
    workspace = owner.memberships.get().workspace
    assert sample(scrape(client), "gatehouse_audit_stream_backlog") == 0
    stream_create(
        workspace, kind="https", name="SIEM", url="https://siem.example.test/in",
        actor=Actor.of_user(owner),
    )  # fmt: skip
    for n in range(3):
        audit_record(workspace=workspace, action="settings.changed", actor=Actor.of_user(owner),
                     subject=f"Acme {n}")  # fmt: skip
    AuditStreamItem.objects.update(created_at=timezone.now() - timedelta(minutes=20))
    text = scrape(client)
    assert sample(text, "gatehouse_audit_stream_backlog") == 4  # its own creation, and 3
    assert sample(text, "gatehouse_audit_stream_oldest_seconds") >= 1200


def test_redis_and_its_unmoved_batches(client, with_redis):
    _start, stop = with_redis
    text = scrape(client)
    assert sample(text, "gatehouse_redis_up") == 1
    assert 'gatehouse_unmoved_batches{kind="request_log"} 0.0' in text
    stop()
    assert sample(scrape(client), "gatehouse_redis_up") == 0


@pytest.mark.django_db(transaction=True)
def test_webhook_deliveries_and_tasks_are_counted_by_outcome(client):
    from apps.api_keys.services import api_key_revoke
    from apps.audit.services import Actor
    from tests.conftest import run_batched
    from tests.factories import owner_of
    from tests.webhooks.receiver import receiver
    from tests.webhooks.test_deliveries import subscribe

    owner = owner_of(email="owner@example.com")
    before = scrape(client)
    with receiver(answers=[500]) as hooks:
        subscribe(owner, hooks.url, ["key.revoked"])
        api_key_revoke(key=make_key(user=owner).key, actor=Actor.of_user(owner))
        run_batched()  # the first attempt: 500, by the batching worker
        from apps.webhooks.delivery import deliver_one
        from apps.webhooks.models import WebhookDelivery

        deliver_one.call(WebhookDelivery.objects.get().message_id, manual=True)  # then 200
    after = scrape(client)

    def delta(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    assert delta("gatehouse_webhook_deliveries_total", outcome="failed") == 1
    assert delta("gatehouse_webhook_deliveries_total", outcome="delivered") == 1
    assert delta("gatehouse_webhook_delivery_lag_seconds_count") == 1
    assert delta("gatehouse_tasks_total", outcome="done") >= 1


@pytest.mark.django_db(transaction=True)
def test_audit_stream_batches_are_counted_by_outcome_with_their_lag(client, monkeypatch):
    from datetime import timedelta

    from django.db import transaction

    from apps.audit.services import Actor, audit_record
    from apps.audit_streams import delivery
    from apps.audit_streams.models import AuditStreamItem
    from apps.audit_streams.services import stream_create
    from apps.deliveries.engine import RetrySchedule
    from tests.audit_streams.test_https_stream import run_until
    from tests.factories import owner_of
    from tests.webhooks.receiver import receiver

    monkeypatch.setattr(delivery, "RETRIES", RetrySchedule([timedelta(seconds=0.2)], True))
    owner = owner_of(email="owner@example.com")
    workspace = owner.memberships.get().workspace
    before = scrape(client)
    with receiver(answers=[500]) as siem:
        stream_create(workspace, kind="https", name="SIEM", url=siem.url,
                      actor=Actor.of_user(owner))  # fmt: skip
        for n in range(3):
            with transaction.atomic():
                audit_record(workspace=workspace, action="settings.changed",
                             actor=Actor.of_user(owner), subject=f"Acme {n}")  # fmt: skip
        AuditStreamItem.objects.update(created_at=timezone.now() - timedelta(minutes=2))
        run_until(lambda: not AuditStreamItem.objects.exists())
    after = scrape(client)

    def delta(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    assert delta("gatehouse_audit_stream_deliveries_total", outcome="failed") == 1
    assert delta("gatehouse_audit_stream_deliveries_total", outcome="delivered") == 1
    assert delta("gatehouse_audit_stream_delivered_events_total") == 4  # its creation, and 3
    assert delta("gatehouse_audit_stream_lag_seconds_count") == 1
    assert delta("gatehouse_audit_stream_lag_seconds_sum") >= 120


def test_a_jsonrpc_error_is_counted_as_the_refusal_it_is_not_as_2xx(client):
    created = make_key(scopes=["pages:read"])
    before = scrape(client)
    answer = client.post(
        "/mcp",
        {"jsonrpc": "2.0", "id": 1, "method": "no/such-method"},
        content_type="application/json",
        HTTP_ACCEPT="application/json, text/event-stream",
        HTTP_MCP_PROTOCOL_VERSION="2025-06-18",
        HTTP_AUTHORIZATION=f"Bearer {created.secret}",
    )
    assert answer.json()["error"]["code"] == -32601
    after = scrape(client)

    def delta(status: str) -> float:
        name = "gatehouse_requests_total"
        return sample(after, name, door="mcp", status=status) - sample(
            before, name, door="mcp", status=status
        )

    assert (delta("2xx"), delta("4xx")) == (0, 1)
