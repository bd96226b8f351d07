"""Webhook endpoints as owners manage them (the dashboard and `manage.py webhooks` share these):
each change audited in its own transaction."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.db import transaction
from django.utils import timezone

from apps.audit.services import Actor, audit_record
from apps.common.validation import InvalidInput
from apps.deliveries.engine import destination_delete

from .audit_actions import (
    WEBHOOK_CREATED,
    WEBHOOK_DELETED,
    WEBHOOK_REDELIVERED,
    WEBHOOK_SECRET_ROLLED,
    WEBHOOK_UPDATED,
)
from .delivery import deliver_one
from .destinations import clean_url
from .events import EVENT_TYPES, PING, webhook_emit
from .models import WebhookDelivery, WebhookEndpoint
from .secrets import new_secret, seal

if TYPE_CHECKING:
    from apps.workspaces.models import Workspace

ROLL_OVERLAP = timedelta(hours=24)
MAX_ENDPOINTS = 20


@dataclass(frozen=True)
class EndpointWithSecret:
    """An endpoint and its new secret: shown once, never stored in the clear."""

    endpoint: WebhookEndpoint
    secret: str


def clean_event_types(event_types: list[str]) -> list[str]:
    unknown = sorted(set(event_types) - set(EVENT_TYPES))
    if unknown:
        raise InvalidInput(
            "event_types",
            f"Unknown event type: {', '.join(unknown)}. Known: {', '.join(EVENT_TYPES)}.",
        )
    if not event_types:
        raise InvalidInput("event_types", "Choose at least one event type.")
    return [t for t in EVENT_TYPES if t in event_types]


def _described(endpoint: WebhookEndpoint) -> str:
    """An endpoint in a line, for the audit log's before → after."""
    state = "enabled" if endpoint.enabled else "disabled"
    described = f" “{endpoint.description}”" if endpoint.description else ""
    return f"{endpoint.url}{described}, {state}, events: {', '.join(endpoint.event_types)}"


def endpoint_create(
    workspace: "Workspace",
    *,
    url: str,
    event_types: list[str],
    description: str = "",
    actor: Actor,
) -> EndpointWithSecret:
    """Add an endpoint with a new `whsec_` secret (returned once)."""
    url, event_types = clean_url(url), clean_event_types(event_types)
    if WebhookEndpoint.objects.filter(workspace=workspace).count() >= MAX_ENDPOINTS:
        raise InvalidInput(
            "endpoints", f"A workspace can have at most {MAX_ENDPOINTS} webhook endpoints."
        )
    secret = new_secret()
    with transaction.atomic():
        endpoint = WebhookEndpoint.objects.create(
            workspace=workspace,
            url=url,
            description=description.strip()[:200],
            event_types=event_types,
            secret_encrypted=seal(secret),
            created_by=actor.user,
        )
        audit_record(
            workspace=workspace,
            action=WEBHOOK_CREATED,
            actor=actor,
            subject=url,
            data={"field": "endpoint", "after": _described(endpoint)},
        )
    return EndpointWithSecret(endpoint, secret)


def endpoint_update(
    endpoint: WebhookEndpoint,
    *,
    url: str,
    event_types: list[str],
    description: str,
    enabled: bool,
    actor: Actor,
) -> WebhookEndpoint:
    """Change an endpoint; enabling one again starts its failure count afresh."""
    before = _described(endpoint)
    endpoint.url, endpoint.event_types = clean_url(url), clean_event_types(event_types)
    endpoint.description = description.strip()[:200]
    if enabled and not endpoint.enabled:
        endpoint.failing_since, endpoint.disabled_reason = None, ""
    endpoint.enabled = enabled
    after = _described(endpoint)
    if after == before:
        return endpoint
    with transaction.atomic():
        endpoint.save()
        audit_record(
            workspace=endpoint.workspace,
            action=WEBHOOK_UPDATED,
            actor=actor,
            subject=endpoint.url,
            data={"field": "endpoint", "before": before, "after": after},
        )
    return endpoint


def endpoint_roll_secret(
    endpoint: WebhookEndpoint, *, actor: Actor, now: datetime | None = None
) -> EndpointWithSecret:
    """A new secret; the old one keeps signing beside it for 24 hours."""
    now = now or timezone.now()
    secret = new_secret()
    with transaction.atomic():
        endpoint.previous_secret_encrypted = endpoint.secret_encrypted
        endpoint.previous_secret_expires_at = now + ROLL_OVERLAP
        endpoint.secret_encrypted = seal(secret)
        endpoint.save()
        audit_record(
            workspace=endpoint.workspace,
            action=WEBHOOK_SECRET_ROLLED,
            actor=actor,
            subject=endpoint.url,
            data={"previous_signs_until": endpoint.previous_secret_expires_at.isoformat()},
        )
    return EndpointWithSecret(endpoint, secret)


def endpoint_delete(endpoint: WebhookEndpoint, *, actor: Actor) -> None:
    """Remove an endpoint and its delivery log; nothing more is sent to it."""
    destination_delete(
        endpoint,
        workspace=endpoint.workspace,
        action=WEBHOOK_DELETED,
        actor=actor,
        subject=endpoint.url,
        described=_described(endpoint),
        field="endpoint",
    )


def endpoint_send_test(endpoint: WebhookEndpoint, *, actor: Actor) -> None:
    """Queue a `webhook.ping` for this endpoint alone (enabled or not)."""
    with transaction.atomic():
        webhook_emit(
            endpoint.workspace,
            PING,
            {"endpoint": {"id": endpoint.pk, "url": endpoint.url}, "sentBy": actor.label},
            endpoints=[endpoint],
        )


def delivery_redeliver(delivery: WebhookDelivery, *, actor: Actor) -> None:
    """Send a delivery again, by hand, with its original `webhook-id` and body."""
    with transaction.atomic():
        audit_record(
            workspace=delivery.endpoint.workspace,
            action=WEBHOOK_REDELIVERED,
            actor=actor,
            subject=delivery.endpoint.url,
            data={"message_id": delivery.message_id, "type": delivery.event_type},
        )
        deliver_one.enqueue(delivery.message_id, manual=True)
