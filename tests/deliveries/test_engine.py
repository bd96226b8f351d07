"""The delivery engine webhooks and audit streams share (apps/deliveries/engine.py)."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core import mail

from apps.audit.models import AuditEvent
from apps.deliveries.engine import OwnersNotice, RetrySchedule, destination_disable_failing
from apps.webhooks.models import WebhookEndpoint
from tests.conftest import run_tasks
from tests.factories import WorkspaceFactory, owner_of

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def test_a_schedule_waits_in_its_order_then_stops_or_repeats_its_last_wait():
    waits = [timedelta(seconds=5), timedelta(minutes=5)]
    stops = RetrySchedule(waits)
    assert stops.next_attempt_at(NOW, 1) == NOW + timedelta(seconds=5)
    assert stops.next_attempt_at(NOW, 2) == NOW + timedelta(minutes=5)
    assert stops.next_attempt_at(NOW, 3) is None
    repeats = RetrySchedule(waits, repeat_last=True)
    assert repeats.next_attempt_at(NOW, 30) == NOW + timedelta(minutes=5)
    with pytest.raises(ValueError):
        stops.next_attempt_at(NOW, 0)


@pytest.mark.django_db
def test_a_failing_destination_is_turned_off_once_audited_and_its_owners_told_once():
    workspace = WorkspaceFactory(name="Acme")
    owner_of(workspace, email="owner@acme.test")
    endpoint = WebhookEndpoint.objects.create(
        workspace=workspace, url="https://hooks.example/in", secret_encrypted="x"
    )
    arguments = dict(
        workspace=workspace,
        reason="Every delivery failed for 5 days.",
        action="webhook.disabled",
        actor_name="webhook deliveries",
        subject=endpoint.url,
        data={"failing_since": NOW.isoformat()},
        notice=OwnersNotice("Webhook endpoint disabled", "It failed."),
    )
    destinations = WebhookEndpoint.objects.filter(pk=endpoint.pk)
    assert destination_disable_failing(destinations, **arguments) is True
    assert destination_disable_failing(destinations, **arguments) is False  # already off
    run_tasks()
    endpoint.refresh_from_db()
    assert not endpoint.enabled and endpoint.disabled_reason == "Every delivery failed for 5 days."
    events = AuditEvent.objects.filter(action="webhook.disabled", workspace=workspace)
    assert events.count() == 1 and events.get().actor_label == "operator (webhook deliveries)"
    assert [m.to for m in mail.outbox] == [["owner@acme.test"]]
