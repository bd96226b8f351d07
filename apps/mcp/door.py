"""The MCP door: the operations as tools, over Streamable HTTP at /mcp, on the official SDK.

Why a WSGI view rather than an ASGI mount or a separate process: the API, the dashboard and
the MCP endpoint then share one server command (`runserver` in development, gunicorn's sync
workers in production), one origin, one bearer authentication and one database connection per
request. The SDK runs in stateless JSON mode: every POST is answered on its own by a fresh
transport, so any app server answers any call and nothing lives between requests.

Each request reads in order: the same checks as the API (routing, a key in the URL, 401s with
WWW-Authenticate, the rate limit, the last-use stamp, the body limit; apps/api/door_steps.py
and apps/api_keys/auth.py, which both doors share), the body parsed once into its JSON-RPC
message, then it is answered: a plain tools/call of one of our tools at once in this thread
(`direct_call.py`), other plain calls through the SDK's single-exchange kernel, the rest
through its Streamable HTTP session manager (`runtime.py`), calling the tools of `toolbox.py`.
`config/urls.py` hands the door its list of operations.
"""

from collections.abc import Callable, Iterable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from apps.api.door_steps import REFUSED, refusal_of, refuse_query_credentials
from apps.api.errors import api_error
from apps.api.http import request_body_bytes
from apps.api.operations import Operation
from apps.api_keys.auth import api_key_from_request, rate_limit_headers
from apps.api_keys.models import ApiKey
from apps.metering.facts import request_facts

from . import runtime, single_exchange
from .checks import jsonrpc_error_answer, jsonrpc_message, origin_allowed, single_exchange_version
from .direct_call import direct_tool_call
from .runtime import Answer
from .scopes import scope_challenge, with_resource_metadata
from .single_exchange import NeedsTransport
from .toolbox import ToolBox

# The methods a client may send (the MCP specification's, 2025-11-25): the request log and the
# usage counts name a request by one of these, or by `unknown-method`. The method is the
# caller's to write: taken as it came, 5,000 characters or a NUL byte made the batch it was
# written in fail on PostgreSQL, and any number of names made any number of usage rows.
CLIENT_METHODS = frozenset(
    {
        "initialize",
        "ping",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
        "tasks/get",
        "tasks/list",
        "tasks/result",
        "tasks/cancel",
        "notifications/initialized",
        "notifications/cancelled",
        "notifications/progress",
        "notifications/roots/list_changed",
        "notifications/tasks/status",
    }
)


def operation_of(message: dict[str, Any], toolbox: ToolBox) -> str:
    """The request's operation: the tool it calls, by its own name, or its JSON-RPC method
    (`response` for a message with none: a client's answer)."""
    method = message.get("method", "response")
    if not isinstance(method, str):
        return "unknown-method"
    if method == "tools/call":
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        return name if isinstance(name, str) and name in toolbox.tools else method
    return method if method in CLIENT_METHODS or method == "response" else "unknown-method"


def _asgi_scope(request: HttpRequest) -> dict[str, Any]:
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1", "replace"))
        for name, value in request.headers.items()
    ]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode(),
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "root_path": "",
        "headers": headers,
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
        "server": (request.get_host(), 0),
    }


def _sdk_answer(
    request: HttpRequest, toolbox: ToolBox, key: ApiKey, message: dict[str, Any], body: bytes
) -> Answer:
    """The SDK's answer: a plain tools/call of one of our tools run here and shaped by the
    SDK (direct_call.py), another plain call through its single-exchange kernel, the rest (and
    what the kernel refuses) through its whole Streamable HTTP transport."""
    facts = request_facts(request)
    version = single_exchange_version(request, message)
    if version is not None:
        if (answer := direct_tool_call(toolbox, key, message, facts)) is not None:
            return answer
        try:
            return single_exchange.mcp_answer_one(
                toolbox.server, key, facts.client_ip, message, version, dict(request.headers), facts
            )
        except NeedsTransport:
            pass  # refused before any handler ran: the transport words the error
    return runtime.mcp_answer(
        toolbox.server, key, facts.client_ip, _asgi_scope(request), body, facts
    )


def _answer(request: HttpRequest, toolbox: ToolBox) -> HttpResponse:
    facts = request_facts(request)
    facts.operation = "mcp"  # until the message says which tool or method
    if request.method != "POST":
        # Stateless: no server-to-client stream (GET) and no session to end (DELETE).
        return api_error(
            "method-not-allowed",
            f"{request.method} is not allowed here; this MCP server is stateless, use POST.",
            Allow="POST",
        )
    if not origin_allowed(request):
        return api_error(
            "origin-not-allowed",
            f"Requests from the web page at {request.headers['Origin']} may not call this MCP "
            "server; an operator can allow that origin with MCP_ALLOWED_ORIGINS.",
        )
    try:
        refuse_query_credentials(request)
        key = api_key_from_request(request)
        facts.workspace_id = key.workspace_id
        body = request_body_bytes(request)
    except REFUSED as error:  # a dropped connection in the key's lookup: 503, as the API says
        return with_resource_metadata(request, refusal_of(error).response())
    message = jsonrpc_message(body)
    if isinstance(message, HttpResponse):  # not one JSON-RPC message: refused in plain words
        return message
    facts.operation = tool = operation_of(message, toolbox)
    facts.quota_exempt = tool not in toolbox.tools  # a quota counts tools/call only (§17)
    op = toolbox.operations.get(tool)
    if op is not None and (challenge := scope_challenge(request, key, op)):
        return challenge
    status, headers, content = _sdk_answer(request, toolbox, key, message, body)
    facts.answered_as = facts.answered_as or jsonrpc_error_answer(content)
    response = HttpResponse(content, status=status)
    for name, value in headers:
        if name.lower() not in (b"content-length",):
            response[name.decode("latin-1")] = value.decode("latin-1")
    return response


def mcp_endpoint_for(operations: Iterable[Operation]) -> Callable[[HttpRequest], HttpResponse]:
    """The view of POST /mcp for these operations: one JSON-RPC message in, its JSON answer out
    (stateless Streamable HTTP), with the key's rate-limit fields on every answer."""
    toolbox = ToolBox(operations)

    @csrf_exempt
    def mcp_endpoint(request: HttpRequest) -> HttpResponse:
        return rate_limit_headers(request, _answer(request, toolbox))

    mcp_endpoint.toolbox = toolbox  # type: ignore[attr-defined]
    return mcp_endpoint
