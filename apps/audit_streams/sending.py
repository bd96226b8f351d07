"""What a stream sends and how: each event as the audit log's CSV has it (no secret in it), as
JSON lines to an HTTPS endpoint (signed by Standard Webhooks) or as RFC 5424 messages with RFC
6587 octet counting to a syslog server over TLS."""

import ipaddress
import json
import socket
import ssl
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

import httpcore
import httpx
from django.conf import settings
from standardwebhooks.webhooks import Webhook

from apps.audit_pages.presentation import CSV_COLUMNS, csv_row
from apps.webhooks.destinations import address_allowed, delivery_client, time_limit
from apps.webhooks.secrets import unseal

from .models import AuditStream, AuditStreamItem

TIMEOUT_SECONDS = 10
# RFC 5424: facility 13 (log audit), severity 6 (informational).
PRIORITY = 13 * 8 + 6
# The SD-ID's enterprise number is 32473, which RFC 5612 sets aside for documentation.
SD_ID = "gatehouse@32473"
TEST_ACTION = "audit_stream.test"


class SendFailed(Exception):
    """A batch that did not arrive, with the reason the page shows."""


def records(stream: AuditStream, items: Sequence[AuditStreamItem]) -> list[dict[str, Any]]:
    """The events of `items` in their order, each with its stable id and its workspace."""
    workspace = stream.workspace
    zone = ZoneInfo(workspace.timezone)
    place = {"id": str(workspace.pk), "name": workspace.name}
    out = []
    for item in items:
        if item.event is None:
            out.append(json.loads(item.payload))
        else:
            fields = dict(zip(CSV_COLUMNS, csv_row(item.event, zone), strict=True))
            out.append({"id": str(item.event.pk), "workspace": place, **fields})
    return out


def json_lines(batch: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n" for r in batch)


def send_https(
    stream: AuditStream, batch: list[dict[str, Any]], batch_id: str, now: datetime
) -> None:
    """One POST of the batch as JSON lines, signed; SendFailed unless the answer is 2xx."""
    body = json_lines(batch)
    try:
        headers: dict[str, str] = (
            json.loads(unseal(stream.headers_encrypted)) if stream.headers_encrypted else {}
        )
        signature = Webhook(unseal(stream.secret_encrypted)).sign(batch_id, now, body)
    except Exception as exc:  # cryptography's InvalidToken: SECRET_KEY changed
        raise SendFailed("The secret or headers cannot be read (SECRET_KEY changed).") from exc
    headers |= {
        "webhook-id": batch_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/x-ndjson",
    }
    try:
        with (
            time_limit(TIMEOUT_SECONDS),
            delivery_client().stream(
                "POST", stream.url, content=body.encode(), headers=headers
            ) as response,
        ):
            status = response.status_code
    except (httpx.TimeoutException, httpcore.TimeoutException):
        raise SendFailed(f"No answer within {TIMEOUT_SECONDS} seconds.") from None
    except (httpx.HTTPError, httpcore.ConnectError, OSError) as exc:
        raise SendFailed(f"Could not connect: {exc}"[:300]) from None
    if not 200 <= status < 300:
        raise SendFailed(f"The endpoint answered {status}; 2xx is expected (no redirects).")


def _sd_value(value: str) -> str:
    """A PARAM-VALUE of RFC 5424 §6.3.3: '"', '\\' and ']' escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("]", "\\]")


def _ascii_token(value: str, limit: int) -> str:
    """A header field of RFC 5424 (PRINTUSASCII, no space), or its NILVALUE."""
    kept = "".join(c for c in value if 33 <= ord(c) <= 126)[:limit]
    return kept or "-"


def syslog_frame(record: dict[str, Any], hostname: str) -> bytes:
    """One RFC 5424 message, framed by octet counting (RFC 6587 §3.4.1): `LEN SP MSG`."""
    at = datetime.fromisoformat(record["time_utc"]).astimezone(UTC)
    workspace = record["workspace"]
    structured = (
        f'[{SD_ID} workspace="{_sd_value(workspace["id"])}" '
        f'workspaceName="{_sd_value(workspace["name"])}" eventId="{_sd_value(record["id"])}"]'
    )
    header = (
        f"<{PRIORITY}>1 {at.strftime('%Y-%m-%dT%H:%M:%S.%fZ')} {_ascii_token(hostname, 255)} "
        f"gatehouse - {_ascii_token(record['action'], 32)} {structured} "
    )
    message = header.encode() + "\ufeff".encode() + json.dumps(record, ensure_ascii=False).encode()
    return f"{len(message)} ".encode() + message


def _connect(host: str, port: int) -> socket.socket:
    """A TCP connection to an address of `host` that deliveries may reach (as webhooks')."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise SendFailed(f"Cannot resolve {host}: {exc}") from None
    address = str(found[0][4][0])
    if not address_allowed(ipaddress.ip_address(address)):
        raise SendFailed(f"{host} resolves to a private or reserved address.")  # not which one
    try:
        return socket.create_connection((address, port), timeout=TIMEOUT_SECONDS)
    except OSError as exc:
        raise SendFailed(f"Could not connect to {host}:{port}: {exc}"[:300]) from None


def send_syslog(stream: AuditStream, batch: list[dict[str, Any]]) -> None:
    """The batch over one TLS connection, trusting only the stream's CA; the connection is
    closed with TLS's close_notify before the batch counts as sent."""
    assert stream.port is not None
    try:
        context = ssl.create_default_context(cadata=stream.ca_pem)
    except (ssl.SSLError, ValueError) as exc:
        raise SendFailed(f"The CA certificate cannot be read: {exc}"[:300]) from None
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    hostname = urlsplit(settings.SITE_URL).hostname or "-"
    data = b"".join(syslog_frame(record, hostname) for record in batch)
    raw = _connect(stream.host, stream.port)
    try:
        with context.wrap_socket(raw, server_hostname=stream.host) as tls:
            tls.sendall(data)
            # Our close_notify, then the server's end of the stream (rsyslog closes without
            # its own close_notify): it has read everything before it. A reset or no answer
            # is a failure, and the batch is sent again (at least once).
            try:
                tls.unwrap()
            except (ssl.SSLEOFError, ssl.SSLZeroReturnError):
                pass
    except ssl.SSLCertVerificationError as exc:
        raise SendFailed(
            f"TLS: the server's certificate is not trusted: {exc.verify_message}"
        ) from None
    except (ssl.SSLError, OSError) as exc:
        raise SendFailed(f"Could not send to {stream.host}:{stream.port}: {exc}"[:300]) from None
    finally:
        raw.close()
