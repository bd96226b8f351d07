"""`GET/POST/DELETE /audit-streams` (docs/product.md §14): owners' keys, keys:read to list,
keys:write to add or remove; also `gatehouse audit-streams ...`. Adding an HTTPS stream hands
out its signing secret, so it is not an MCP tool."""

from typing import Any

from apps.api.operations import (
    Call,
    Needs,
    NotFound,
    Operation,
    Param,
    body_fields,
    list_schema,
    object_schema,
)
from apps.api.schemas import date_time, single_line_text
from apps.workspaces.models import Membership

from .models import AuditStream
from .records import StreamStatus, stream_to_json, streams_status
from .services import MAX_HEADERS, stream_create, stream_delete

OWNERS = (Membership.Role.OWNER,)
STREAMS_READ = Needs(scope="keys:read", roles=OWNERS)
STREAMS_WRITE = Needs(scope="keys:write", roles=OWNERS)
STREAM_ID = Param("streamId", "path", "The stream's id, as list_audit_streams gives it.")
NULLABLE_TEXT = {"type": ["string", "null"]}

STREAM = object_schema(
    {
        "id": {"type": "integer"},
        "kind": {"enum": ["https", "syslog"]},
        "name": {"type": "string"},
        "events": {
            "type": "array",
            "items": {"type": "string"},
            "description": "The audit actions it takes; empty: every event.",
        },
        "url": {**NULLABLE_TEXT, "description": "An HTTPS stream's endpoint."},
        "headers": {
            "type": "array",
            "items": {"type": "string"},
            "description": "The names of its custom headers; their values are never shown.",
        },
        "host": {**NULLABLE_TEXT, "description": "A syslog stream's server."},
        "port": {"type": ["integer", "null"]},
        "state": {"enum": ["active", "failing", "paused", "disabled"]},
        "disabledReason": NULLABLE_TEXT,
        "createdAt": date_time(),
        "backlog": {"type": "integer", "description": "Events waiting to be sent."},
        "lagSeconds": {"type": "integer", "description": "The age of the oldest waiting event."},
        "delivered": {"type": "integer", "description": "Events sent since it was added."},
        "lastDeliveryAt": {"type": ["string", "null"], "format": "date-time"},
        "lastError": NULLABLE_TEXT,
        "lastErrorAt": {"type": ["string", "null"], "format": "date-time"},
    }
)
STREAM_SECRET = object_schema(
    {
        "stream": STREAM,
        "secret": {
            **NULLABLE_TEXT,
            "description": "An HTTPS stream's whsec_ signing secret, this once; null for syslog.",
        },
    }
)
STREAM_CREATE = object_schema(
    {
        "kind": {"enum": ["https", "syslog"]},
        "name": single_line_text(100),
        "events": {
            "type": "array",
            "items": {"type": "string", "maxLength": 40},
            "maxItems": 200,
            "description": "Audit actions (key.created, cli.login, ...); empty or left out: all.",
        },
        "url": {"type": "string", "maxLength": 2000, "description": "https only: the endpoint."},
        "headers": {
            "type": "object",
            "additionalProperties": {"type": "string", "maxLength": 2000},
            "maxProperties": MAX_HEADERS,
            "description": "https only: custom headers sent with each batch (an Authorization "
            "token, say). Stored encrypted; never shown again.",
        },
        "host": {"type": "string", "maxLength": 253, "description": "syslog only: the server."},
        "port": {"type": "integer", "minimum": 1, "maximum": 65535, "description": "syslog only."},
        "caCertificate": {
            "type": "string",
            "maxLength": 65536,
            "description": "syslog only: the PEM certificate(s) the server's must chain to.",
        },
    },
    required=False,
)
STREAM_CREATE["required"] = ["kind", "name"]


def _status(call: Call, stream_id: int) -> StreamStatus:
    found = [s for s in streams_status(call.workspace) if s.stream.pk == stream_id]
    if not found:
        raise NotFound("No audit stream with this id in this workspace.")
    return found[0]


def _list(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    return {"data": [stream_to_json(s) for s in streams_status(call.workspace)]}


def _create(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    fields = body_fields(body, STREAM_CREATE)
    made = stream_create(
        call.workspace,
        kind=fields["kind"],
        name=fields["name"],
        actor=call.actor,
        events=fields.get("events", []),
        url=fields.get("url", ""),
        headers=fields.get("headers"),
        host=fields.get("host", ""),
        port=fields.get("port"),
        ca_certificate=fields.get("caCertificate", ""),
    )
    return {"stream": stream_to_json(_status(call, made.stream.pk)), "secret": made.secret}


def _delete(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    status = _status(call, params["streamId"])
    record = stream_to_json(status)
    stream_delete(
        AuditStream.objects.select_related("workspace").get(pk=status.stream.pk),
        actor=call.actor,
    )
    return record


OPERATIONS = (
    Operation(
        name="list_audit_streams",
        method="GET",
        path="/audit-streams",
        needs=STREAMS_READ,
        title="List audit streams",
        summary=(
            "The workspace's audit streams (HTTPS endpoints and syslog servers that receive "
            "every audit event), each with its state, backlog, lag, last delivery and last "
            "error. Needs keys:read and an owner's key."
        ),
        output_name="AuditStreamList",
        output=list_schema(STREAM),
        cli="audit-streams list",
        cli_columns=("id", "kind", "name", "state", "backlog", "lastDeliveryAt"),
        run=_list,
    ),
    Operation(
        name="create_audit_stream",
        method="POST",
        path="/audit-streams",
        needs=STREAMS_WRITE,
        title="Add an audit stream",
        summary=(
            "Stream the audit log to an HTTPS endpoint (JSON lines signed by Standard "
            "Webhooks, custom headers) or a syslog server (RFC 5424 over TLS, with the CA to "
            "trust). An HTTPS stream's signing secret is in the answer, this once. Needs "
            "keys:write and an owner's key."
        ),
        output_name="AuditStreamWithSecret",
        output=STREAM_SECRET,
        body_name="AuditStreamCreate",
        body=STREAM_CREATE,
        status=201,
        mcp=False,
        cli="audit-streams create",
        run=_create,
    ),
    Operation(
        name="delete_audit_stream",
        method="DELETE",
        path="/audit-streams/{streamId}",
        needs=STREAMS_WRITE,
        title="Remove an audit stream",
        summary="Remove an audit stream and the events it has yet to send.",
        output_name="AuditStream",
        output=STREAM,
        params=(STREAM_ID,),
        status=204,
        can_be_not_found=True,
        cli="audit-streams delete",
        cli_done="Removed audit stream {streamId}.",
        run=_delete,
    ),
)
