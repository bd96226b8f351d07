"""Audit streams as owners manage them (the Settings page and the API share these): each
change audited in its own transaction."""

import json
import re
import secrets
from dataclasses import dataclass
from datetime import UTC
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from apps.audit.actions import action_choices
from apps.audit.services import Actor, audit_record
from apps.audit_pages.presentation import CSV_COLUMNS
from apps.common.dates import moment_text
from apps.common.validation import InvalidInput, clean_text
from apps.deliveries.engine import destination_delete
from apps.webhooks.destinations import clean_url
from apps.webhooks.secrets import new_secret, seal

from .audit_actions import STREAM_CREATED, STREAM_DELETED, STREAM_PAUSED, STREAM_RESUMED
from .delivery import stream_deliver, stream_send_now
from .models import PAUSED, AuditStream
from .sending import TEST_ACTION
from .syslog_target import clean_syslog_target

if TYPE_CHECKING:
    from apps.workspaces.models import Workspace

MAX_STREAMS = 10
MAX_HEADERS = 20
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$")
# Set by the delivery itself: a custom header may not replace them.
RESERVED_HEADERS = {
    "content-type",
    "content-length",
    "host",
    "transfer-encoding",
    "connection",
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
}
HEADER_VALUE = re.compile(r"^[\x20-\x7e]{1,2000}$")


@dataclass(frozen=True)
class StreamWithSecret:
    """A new stream and its signing secret (HTTPS only): shown once, never stored in the clear."""

    stream: AuditStream
    secret: str | None


def clean_actions(actions: Any) -> list[str]:
    """An event filter: known audit actions ([] takes every event)."""
    if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
        raise InvalidInput("events", "events must be a list of audit action codes.")
    known = [code for code, _ in action_choices()]
    unknown = sorted(set(actions) - set(known))
    if unknown:
        raise InvalidInput("events", f"Unknown audit action: {', '.join(unknown)}.")
    return [code for code in known if code in actions]


def clean_headers(headers: Any) -> dict[str, str]:
    """Up to 20 custom headers, `{name: value}`: names as HTTP has them, none that the
    delivery sets itself; values of visible ASCII and spaces."""
    if not isinstance(headers, dict):
        raise InvalidInput("headers", "headers must be an object of header names to values.")
    if len(headers) > MAX_HEADERS:
        raise InvalidInput("headers", f"At most {MAX_HEADERS} custom headers.")
    cleaned: dict[str, str] = {}
    for name, value in headers.items():
        if not HEADER_NAME.match(name):
            raise InvalidInput("headers", f"{name!r} is not a valid header name.")
        if name.lower() in RESERVED_HEADERS or name.lower() in {n.lower() for n in cleaned}:
            raise InvalidInput("headers", f"The header {name} is set by the delivery or twice.")
        if not isinstance(value, str) or not HEADER_VALUE.match(value.strip()):
            raise InvalidInput(
                "headers", f"The value of {name} must be 1 to 2000 visible ASCII characters."
            )
        cleaned[name] = value.strip()
    return cleaned


def _described(stream: AuditStream) -> str:
    """A stream in a line for the audit log: never a header's value."""
    events = ", ".join(stream.actions) if stream.actions else "every event"
    headers = f", headers: {', '.join(stream.header_names)}" if stream.header_names else ""
    return f"{stream.get_kind_display()} {stream.destination}{headers}, events: {events}"


def stream_create(
    workspace: "Workspace",
    *,
    kind: str,
    name: str,
    actor: Actor,
    events: Any = None,
    url: str = "",
    headers: Any = None,
    host: str = "",
    port: Any = None,
    ca_certificate: str = "",
) -> StreamWithSecret:
    """Add a stream; an HTTPS one gets a new `whsec_` secret (returned once)."""
    if kind not in AuditStream.Kind.values:
        raise InvalidInput("kind", "kind must be https or syslog.")
    stream = AuditStream(
        workspace=workspace,
        kind=kind,
        name=clean_text(name, "name", max_length=100),
        actions=clean_actions([] if events is None else events),
        created_by=actor.user,
    )
    secret = None
    if kind == AuditStream.Kind.HTTPS:
        if not isinstance(url, str) or not url.strip():
            raise InvalidInput("url", "An HTTPS stream needs its endpoint's url.")
        stream.url = clean_url(url)
        cleaned = clean_headers(headers or {})
        secret = new_secret()
        stream.secret_encrypted = seal(secret)
        stream.header_names = list(cleaned)
        stream.headers_encrypted = seal(json.dumps(cleaned)) if cleaned else ""
    else:
        stream.host, stream.port, stream.ca_pem = clean_syslog_target(host, port, ca_certificate)
    if AuditStream.objects.filter(workspace=workspace).count() >= MAX_STREAMS:
        raise InvalidInput("streams", f"A workspace can have at most {MAX_STREAMS} audit streams.")
    with transaction.atomic():
        stream.save()
        audit_record(
            workspace=workspace,
            action=STREAM_CREATED,
            actor=actor,
            subject=stream.name,
            data={"field": "audit_stream", "after": _described(stream)},
        )
    return StreamWithSecret(stream, secret)


def stream_delete(stream: AuditStream, *, actor: Actor) -> None:
    """Remove a stream and its backlog: nothing more is sent to it."""
    destination_delete(
        stream,
        workspace=stream.workspace,
        action=STREAM_DELETED,
        actor=actor,
        subject=stream.name,
        described=_described(stream),
        field="audit_stream",
    )


def stream_set_enabled(stream: AuditStream, enabled: bool, *, actor: Actor) -> None:
    """Pause a stream (its events wait, AUDIT_STREAM_DAYS at most) or resume it (they are sent,
    oldest first, and its failure count starts afresh)."""
    if stream.enabled == enabled:
        return
    with transaction.atomic():
        AuditStream.objects.filter(pk=stream.pk).update(
            enabled=enabled,
            disabled_reason="" if enabled else PAUSED,
            failures=0,
            failing_since=None,
            next_attempt_at=None,
        )
        audit_record(
            workspace=stream.workspace,
            action=STREAM_RESUMED if enabled else STREAM_PAUSED,
            actor=actor,
            subject=stream.name,
        )
        if enabled:
            stream_deliver.enqueue([stream.pk])


def stream_send_test(stream: AuditStream, *, actor: Actor) -> tuple[str, str | None]:
    """Send a test event to this stream now, ahead of its waiting events (a batch of its own,
    whatever their state): (its id, why it failed or None)."""
    now = timezone.now()
    record: dict[str, Any] = dict.fromkeys(CSV_COLUMNS, "")
    event_id = f"test_{secrets.token_hex(8)}"
    record |= {
        "time": moment_text(now, UTC),
        "time_utc": now.astimezone(UTC).isoformat(),
        "action": TEST_ACTION,
        "action_label": "Audit stream test event",
        "actor": actor.label,
        "subject": stream.name,
        "details": "A test event: nothing happened in the workspace.",
    }
    payload = {
        "id": event_id,
        "workspace": {"id": str(stream.workspace.pk), "name": stream.workspace.name},
        **record,
    }
    return event_id, stream_send_now(stream, payload, event_id)
