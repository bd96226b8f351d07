"""The events a workspace's webhooks receive, and how one is queued: a delivery row per
subscribed endpoint and one task, written in the transaction of the change the event reports
(no event without its change, no change without its event)."""

import json
import secrets
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from apps.audit.services import IDENTITY_PROVIDER

from .delivery import deliver_event
from .models import WebhookEndpoint

if TYPE_CHECKING:
    from apps.audit.models import AuditEvent
    from apps.workspaces.models import Workspace

EVENT_TYPES = {
    "key.created": "A key was created",
    "key.revoked": "A key was revoked",
    "key.rolled": "A key's secret was rolled",
    "key.narrowed": "A key's permissions were narrowed",
    "key.expiring": "A key expires in 7 days, then in 1 day",
    "key.expired": "A key expired",
    "key.leaked": "A key was found leaked and revoked",
    "key.new_network": "A key was used from a network new to it",
    "key.approval_requested": "A key waits for an owner's approval",
    "key.approved": "An owner approved a waiting key",
    "key.denied": "A waiting key was denied (by an owner, or after 7 days without an answer)",
    "key.handed_over": "A person's key was handed over to a service account",
    "key.idle_warning": "A key unused for a while is revoked in 7 days unless used",
    "key.quota_warning": "A key used 80 % of its quota for the period",
    "key.quota_exhausted": "A key used its whole quota for the period",
    "service_account.created": "A service account was created",
    "service_account.deleted": "A service account was deleted (its keys revoked)",
    "cli.login": "Someone signed in to the CLI",
    "oauth.authorized": "Someone connected an app by OAuth (an MCP client)",
    "oauth.revoked": "A connected app was disconnected",
    "member.removed": "A member was removed",
    "member.suspended": "A teammate was suspended by the identity provider (their keys pause)",
    "member.restored": "A suspended teammate was restored (their keys work again)",
    "workspace.updated": "The workspace's settings changed",
}
PING = "webhook.ping"

# Audit actions that are webhook events, and as which type.
AUDITED = {
    "key.created": "key.created",
    "member_key.created": "key.created",
    "key.revoked": "key.revoked",
    "member_key.revoked": "key.revoked",
    "key.rolled": "key.rolled",
    "key.narrowed": "key.narrowed",
    "key.leaked": "key.leaked",
    "key.new_network": "key.new_network",
    "key.new_networks": "key.new_network",  # past five in an hour: one event for the rest
    "key.approval_requested": "key.approval_requested",
    "key.approved": "key.approved",
    "key.denied": "key.denied",
    "key.handed_over": "key.handed_over",
    "key.idle_warning": "key.idle_warning",
    "key.quota_warning": "key.quota_warning",
    "key.quota_exhausted": "key.quota_exhausted",
    "service_account.created": "service_account.created",
    "service_account.deleted": "service_account.deleted",
    "cli.login": "cli.login",
    "oauth.authorized": "oauth.authorized",
    "oauth.revoked": "oauth.revoked",
    "oauth.refresh_reused": "oauth.revoked",  # a copied refresh token: the grant is ended
    "community.member_removed": "member.removed",
    "team.member_removed": "member.removed",
    "member.suspended": "member.suspended",
    "member.restored": "member.restored",
    "settings.changed": "workspace.updated",
}


def key_data(key: Any) -> dict[str, Any]:
    """What an event says of a key: never its secret, only its hint."""
    return {
        "id": key.pk,
        "name": key.name,
        "hint": key.hint,
        "kind": key.kind,
        "scopes": list(key.scopes),
        "holder": key.user.email,
        "expiresAt": key.expires_at.isoformat() if key.expires_at else None,
    }


def webhook_emit(
    workspace: "Workspace",
    event_type: str,
    data: dict[str, Any],
    *,
    at: datetime | None = None,
    endpoints: list[WebhookEndpoint] | None = None,
) -> str | None:
    """Queue `event_type` with `data` for every enabled endpoint of the workspace that takes it
    (or for `endpoints`); return the event's id (None: nobody takes it). Must run inside the
    transaction of the change it reports. The request writes one task row whatever the number
    of endpoints: the worker that runs it writes the deliveries."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("webhook_emit must run inside the transaction of its change")
    if endpoints is None:
        subscribed = WebhookEndpoint.objects.filter(workspace=workspace, enabled=True)
        ids = [
            pk
            for pk, types in subscribed.values_list("pk", "event_types")
            if event_type == PING or event_type in types
        ]
    else:
        ids = [endpoint.pk for endpoint in endpoints]
    if not ids:
        return None
    at = at or timezone.now()
    payload = {
        "type": event_type,
        "timestamp": at.isoformat().replace("+00:00", "Z"),
        "data": {"workspace": {"id": str(workspace.pk), "name": workspace.name}, **data},
    }
    event_id = secrets.token_hex(12)
    body = json.dumps(payload, separators=(",", ":"), default=str)
    deliver_event.enqueue(event_id, event_type, body, ids, at.isoformat())
    return event_id


def emit_audited(event: "AuditEvent") -> None:
    """The audit listener: an audited change that is a webhook event is queued as one."""
    event_type = AUDITED.get(event.action)
    if event_type is None:
        return
    data: dict[str, Any] = {
        "actor": {
            "type": "key"
            if event.actor_key_id
            else "user"
            if event.actor_user_id
            else "identity_provider"
            if event.actor_label.startswith(IDENTITY_PROVIDER)
            else "operator",
            "label": event.actor_label,
            "ip": event.ip,
        },
        "details": event.data,
        "auditEventId": event.pk,
    }
    if event.key is not None:
        data["key"] = key_data(event.key)
    if event.subject and event.key is None:
        data["subject"] = event.subject
    webhook_emit(event.workspace, event_type, data, at=event.created_at)
