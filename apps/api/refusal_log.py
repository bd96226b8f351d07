"""The log lines of refused API and MCP requests: one structured line per refused credential
or authorization, never the secret, at most one a minute per client address and reason."""

import json
import logging
import threading
import time

from django.http import HttpRequest, HttpResponse

from apps.metering.facts import request_facts

logger = logging.getLogger("apps.api")


def error_code_of(response: HttpResponse) -> str:
    """The error code an error answer names: the API's `error`, or a JSON-RPC error's code."""
    try:
        error = json.loads(response.content).get("error", "")
    except (ValueError, AttributeError):
        return ""
    if isinstance(error, dict):  # JSON-RPC: {"code": -32600, "message": ...}
        return f"jsonrpc {error.get('code', '')}".strip()
    return str(error)[:40]


class _RefusalLines:
    """At most one log line per client address and reason a minute in each process, the next
    one saying how many were left out: a client that keeps sending a revoked key must not
    fill the log (nor cost a line per request)."""

    EVERY = 60.0
    MAX_ENTRIES = 10_000

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: dict[tuple[str, str], tuple[float, int]] = {}
        self.clock = time.monotonic

    def due(self, ip: str, reason: str, now: float) -> int | None:
        """None when this refusal is left out; else how many were left out before it."""
        with self.lock:
            last, skipped = self.seen.get((ip, reason), (0.0, 0))
            if now - last < self.EVERY:
                self.seen[(ip, reason)] = (last, skipped + 1)
                return None
            if len(self.seen) >= self.MAX_ENTRIES:
                self.seen = {k: v for k, v in self.seen.items() if now - v[0] < self.EVERY}
            self.seen[(ip, reason)] = (now, 0)
            return skipped

    def clear(self) -> None:
        with self.lock:
            self.seen.clear()


refusal_lines = _RefusalLines()


def log_refusal(request: HttpRequest, response: HttpResponse, reason: str) -> None:
    """One structured line per refused credential or authorization, never the secret itself:
    the reason, the key's id and hint when one was presented, the client address and the path
    (at most one a minute per address and reason: `_RefusalLines`). Django's own
    "Unauthorized: /path" line, which says none of that, is left out."""
    facts = request_facts(request)
    key_id = facts.key_id
    fields = {
        "reason": reason or str(response.status_code),
        "status": response.status_code,
        "key_id": key_id,
        "key_hint": facts.key_hint,
        "ip": facts.client_ip,
        "method": request.method,
        "path": request.path,
        "request_id": facts.request_id,
    }
    skipped = refusal_lines.due(str(fields["ip"]), str(fields["reason"]), refusal_lines.clock())
    if skipped is not None:
        fields["same_refusals_not_logged"] = skipped or None
        logger.warning(
            "API request refused: %s",
            " ".join(f"{name}={value}" for name, value in fields.items() if value is not None),
            extra={"refusal": fields},
        )
    # Read by django.utils.log.log_response, which then writes nothing more.
    response._has_been_logged = True  # type: ignore[attr-defined]


def log_stream_refused(request: HttpRequest, response: HttpResponse) -> None:
    """Streamable HTTP clients ask `GET /mcp` for a server-to-client stream on every
    connection; this stateless server answers 405, as the transport allows. Expected, so a
    DEBUG line here rather than Django's WARNING "Method Not Allowed: /mcp"."""
    logger.debug("GET /mcp answered 405: the MCP server is stateless, it offers no stream")
    response._has_been_logged = True  # type: ignore[attr-defined]
