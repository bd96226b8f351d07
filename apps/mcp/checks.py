"""What /mcp checks before the SDK sees a message: the browser's Origin (the transport
specification's MUST, against DNS rebinding) and the JSON-RPC envelope, refused in plain words
rather than with the SDK's validation report."""

import json
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from mcp_types import DEFAULT_NEGOTIATED_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def origin_allowed(request: HttpRequest) -> bool:
    """The transport specification's MUST: a browser page of another origin may not call /mcp
    (DNS rebinding). No Origin header (every non-browser client) is fine."""
    origin = request.META.get("HTTP_ORIGIN")  # not request.headers: that parses every header
    if origin is None:
        return True
    allowed = {
        f"{request.scheme}://{request.get_host()}".lower(),
        _origin_of(settings.SITE_URL),
        *(_origin_of(o) for o in settings.MCP_ALLOWED_ORIGINS),
    }
    return origin.strip().lower() in allowed


def _jsonrpc_error(code: int, message: str) -> HttpResponse:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return HttpResponse(json.dumps(body), status=400, content_type="application/json")


def _text(body: bytes, message: Any) -> bool:
    """Whether what a reply may carry back (the id, and any object's member names, which an
    error names) can be written as UTF-8. Only a body with a `\\u` escape can hold a lone
    surrogate, so the rest is not looked at again. A value that is no text is the operation's
    to refuse (a tool error naming the field)."""
    if b"\\u" not in body:
        return True
    try:
        json.dumps([message.get("id"), *_names(message)], ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _names(value: Any, depth: int = 0) -> list[str]:
    """The member names of every object in `value` (a JSON value), as deep as 20 levels."""
    if depth > 20:
        return []
    if isinstance(value, dict):
        return [
            name for key, item in value.items() for name in (str(key), *_names(item, depth + 1))
        ]
    if isinstance(value, list):
        return [name for item in value for name in _names(item, depth + 1)]
    return []


def jsonrpc_message(body: bytes) -> dict[str, Any] | HttpResponse:
    """The body's one JSON-RPC 2.0 message (parsed here, once for the whole request), or a
    JSON-RPC error in plain words for a body that is not one.

    The SDK would answer such a body with its validation library's report of internal types.
    """
    try:
        message = json.loads(body)
    except ValueError:
        return _jsonrpc_error(-32700, "Parse error: the body is not valid JSON.")
    except RecursionError:  # nested deeper than the parser goes: no message of ours is
        return _jsonrpc_error(-32700, "Parse error: the JSON is nested too deeply.")
    if not isinstance(message, dict):
        return _jsonrpc_error(
            -32600, "Invalid request: send one JSON-RPC message, a JSON object (not a batch)."
        )
    if not _text(body, message):
        # JSON's \ud800 escapes decode to a lone surrogate, which no reply (an id, an argument
        # named in an error) could carry back.
        return _jsonrpc_error(
            -32600, "Invalid request: the message holds text that is not Unicode."
        )
    if message.get("jsonrpc") != "2.0":
        return _jsonrpc_error(-32600, 'Invalid request: "jsonrpc" must be "2.0".')
    if "method" in message:
        if not isinstance(message["method"], str):
            return _jsonrpc_error(-32600, 'Invalid request: "method" must be a string.')
        if "id" in message and (
            isinstance(message["id"], bool) or not isinstance(message["id"], (str, int))
        ):
            return _jsonrpc_error(-32600, 'Invalid request: "id" must be a string or a number.')
        if "params" in message and not isinstance(message["params"], dict):
            return _jsonrpc_error(-32600, 'Invalid request: "params" must be an object.')
        return message
    if "id" in message and ("result" in message or "error" in message):
        return message  # a response to the server (stateless: nothing awaits it)
    return _jsonrpc_error(
        -32600, 'Invalid request: a message needs a "method" (or is a response with an "id").'
    )


# What the single-exchange path answers itself; anything else (initialize, notifications,
# responses, unusual headers) goes through the SDK's whole transport.
FAST_METHODS = frozenset({"tools/list", "tools/call", "ping"})


def single_exchange_version(request: HttpRequest, message: dict[str, Any]) -> str | None:
    """The protocol version, when the request is a plain JSON-RPC call the SDK's
    single-exchange kernel can answer exactly as its transport would; None otherwise."""
    accept = request.META.get("HTTP_ACCEPT", "")
    if "application/json" not in accept or "text/event-stream" not in accept:
        return None
    if request.content_type != "application/json":
        return None
    version = request.META.get("HTTP_MCP_PROTOCOL_VERSION", DEFAULT_NEGOTIATED_VERSION)
    if version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return None
    if message.get("method") not in FAST_METHODS or message.get("id") is None:
        return None
    return version


# JSON-RPC's errors as the HTTP answers they stand for, for the metrics and the request log:
# a method not found is a 404, the rest a 400 (issue 53: they were counted as 2xx).
_ANSWERED_AS = {-32601: (404, "not-found")}


def jsonrpc_error_answer(content: bytes) -> tuple[int, str] | None:
    """The (status, error) a JSON-RPC error reply (a 200 carrying `"error"`) stands for, or
    None for a result. Only a reply that names an error is parsed."""
    if b'"error"' not in content[:2000] or not content.lstrip().startswith(b"{"):
        return None
    try:
        reply = json.loads(content)
    except ValueError:
        return None
    error = reply.get("error") if isinstance(reply, dict) else None
    if not isinstance(error, dict) or "result" in reply:
        return None
    code = error.get("code")
    return _ANSWERED_AS.get(code, (400, "invalid-input")) if isinstance(code, int) else None
