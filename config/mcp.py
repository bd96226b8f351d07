"""The MCP door: the operations as tools, over Streamable HTTP at /mcp, on the official SDK.

Why a WSGI view rather than an ASGI mount or a separate process: the API, the dashboard and
the MCP endpoint then share one server command (`runserver` in development, gunicorn's sync
workers in production), one origin, one bearer authentication and one database connection per
request. The SDK runs in stateless JSON mode: every POST is answered on its own by a fresh
transport, so any app server answers any call and nothing lives between requests.

Each request reads in order: the same checks as the API (routing, a key in the URL, 401s with
WWW-Authenticate, the rate limit, the last-use stamp, the body limit; config/door_steps.py and
apps/api_keys/auth.py, which both doors share), the body parsed once into its JSON-RPC message,
then the SDK answers it: plain calls through its single-exchange kernel, the rest through its
Streamable HTTP session manager (`apps/mcp/runtime.py`). The SDK validates a tools/call and
calls its handler here, which runs the operation through `operation_run` in this request's own
thread, so it uses the request's database connection and the same services as the API.
"""

import json
import logging
from typing import Any

import mcp_types as types
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from mcp.server.lowlevel.server import Server

from apps.api.errors import STATUS_BY_REASON, ApiFailure, api_error
from apps.api.http import request_body_bytes
from apps.api.operations import Call, NotFound
from apps.api_keys.auth import (
    api_key_authorize,
    api_key_from_request,
    key_may,
    rate_limit_headers,
)
from apps.api_keys.models import ApiKey
from apps.audit.services import Actor
from apps.common.retry import retryable, transaction_conflict
from apps.common.validation import InvalidInput
from apps.mcp.checks import (
    jsonrpc_error_answer,
    jsonrpc_message,
    origin_allowed,
    single_exchange_version,
)
from apps.mcp.runtime import (
    Answer,
    NeedsTransport,
    current_call,
    mcp_answer,
    mcp_answer_one,
    server_lifespan,
)
from apps.mcp.scopes import scope_challenge, step_up_scopes, step_up_tool, with_resource_metadata
from apps.mcp.tools import tool_for
from apps.metering.facts import RequestFacts, request_facts

from .door_steps import object_of, operation_run, refuse_query_credentials
from .operations import OPERATIONS, OPERATIONS_BY_NAME

logger = logging.getLogger("apps.api")

INSTRUCTIONS = (
    "Gatehouse is the workspace API of a course, product and community platform. The key this "
    "client was configured with decides the workspace and which tools are listed: call "
    "get_workspace to see the workspace and the key's scopes. Ids come from the list tools."
)


# Operations that hand out a secret (creating and rolling keys) are not tools: secrets never
# pass through an assistant's context.
TOOLS: dict[str, types.Tool] = {op.name: tool_for(op) for op in OPERATIONS if op.mcp}


def _tool_error(
    reason: str, message: str, facts: RequestFacts | None = None
) -> types.CallToolResult:
    # Text only: structured content would have to match the tool's output schema (the record),
    # and clients that check it, the TypeScript SDK and the Inspector among them, refuse it.
    if facts is not None:  # recorded as the API answers the same refusal
        facts.answered_as = (STATUS_BY_REASON[reason], reason)
    return types.CallToolResult(
        content=[types.TextContent(text=f"{reason}: {message}")], is_error=True
    )


def tool_call(
    key: ApiKey,
    ip: str | None,
    name: str,
    arguments: dict[str, Any],
    facts: RequestFacts | None = None,
) -> types.CallToolResult:
    """Run one tool for `key`: the same authorization, validation and service as the API.
    The object it creates or acts on goes to the request's `facts`, for the request log."""
    op = OPERATIONS_BY_NAME.get(name)
    if op is None or name not in TOOLS:
        return _tool_error("not-found", f"There is no tool named {name!r}.", facts)
    try:
        api_key_authorize(key, op.needs)
        if not isinstance(arguments, dict):
            raise InvalidInput("arguments", "The arguments must be a JSON object.")
        param_names = {param.name for param in op.params}
        unknown = [k for k in arguments if k not in param_names and op.body is None]
        if unknown:
            raise InvalidInput(unknown[0], f"{unknown[0]} is not a known argument.")
        params = {k: v for k, v in arguments.items() if k in param_names}
        body = {k: v for k, v in arguments.items() if k not in param_names}
        call = Call(key=key, workspace=key.workspace, actor=Actor.of_key(key, ip))
        if facts is not None:
            facts.object_id = object_of(op, params)
        record = operation_run(op, call, params, body if op.body is not None else None)
        if facts is not None:
            facts.object_id = object_of(op, params, record)
    except ApiFailure as failure:
        return _tool_error(failure.reason, failure.message, facts)
    except InvalidInput as error:
        return _tool_error("invalid-input", error.message, facts)
    except NotFound as error:
        return _tool_error("not-found", error.message, facts)
    except DatabaseError as error:
        if not retryable(error):
            raise
        if not transaction_conflict(error):
            connection.close()  # a read whose connection dropped, or a step before the operation
        return _tool_error(
            "unavailable", "The database is briefly unreachable; try again in a few seconds.", facts
        )
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(record, ensure_ascii=False))],
        structured_content=record,
    )


async def _list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    """The tools the request's key may call, and for a connected app those it may step up
    to, saying so."""
    key = current_call.get().key
    tools = []
    for name, tool in TOOLS.items():
        needs = OPERATIONS_BY_NAME[name].needs
        if key_may(key, needs):
            tools.append(tool)
        elif step_up_scopes(key, needs) is not None:
            tools.append(step_up_tool(tool, needs))
    return types.ListToolsResult(tools=tools)


async def _call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    call = current_call.get()
    # In the request's own thread, with no loop running: Django's ORM is synchronous.
    arguments = params.arguments or {}
    return await call.run(tool_call, call.key, call.ip, params.name, arguments, call.facts)


def _server() -> Server:
    """The one MCP server of this process; the request's key reaches its handlers through
    `mcp_runtime.current_call`."""
    server = Server(
        "gatehouse",
        version="1.0.0",
        title="Gatehouse",
        instructions=INSTRUCTIONS,
        lifespan=server_lifespan,
        on_list_tools=_list_tools,
        on_call_tool=_call_tool,
    )
    server.middleware = []  # the SDK's OpenTelemetry span per message: no exporter here
    return server


SERVER = _server()


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


def _operation_of(message: dict[str, Any]) -> str:
    """The request's operation: the tool it calls, by its own name, or its JSON-RPC method
    (`response` for a message with none: a client's answer)."""
    method = message.get("method", "response")
    if not isinstance(method, str):
        return "unknown-method"
    if method == "tools/call":
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        return name if isinstance(name, str) and name in TOOLS else method
    return method if method in CLIENT_METHODS or method == "response" else "unknown-method"


def _answer(request: HttpRequest, key: ApiKey, message: dict[str, Any], body: bytes) -> Answer:
    """The SDK's answer: a plain call through its single-exchange kernel, the rest (and what
    the kernel refuses) through its whole Streamable HTTP transport."""
    ip = request_facts(request).client_ip
    version = single_exchange_version(request, message)
    if version is not None:
        try:
            return mcp_answer_one(
                SERVER, key, ip, message, version, dict(request.headers), request_facts(request)
            )
        except NeedsTransport:
            pass  # refused before any handler ran: the transport words the error
    return mcp_answer(SERVER, key, ip, _asgi_scope(request), body, request_facts(request))


@csrf_exempt
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    """POST /mcp: one JSON-RPC message in, its JSON answer out (stateless Streamable HTTP)."""
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
        request_facts(request).workspace_id = key.workspace_id
        body = request_body_bytes(request)
    except ApiFailure as failure:
        return rate_limit_headers(request, with_resource_metadata(request, failure.response()))
    message = jsonrpc_message(body)
    if isinstance(message, HttpResponse):  # not one JSON-RPC message: refused in plain words
        return rate_limit_headers(request, message)
    facts.operation = tool = _operation_of(message)
    facts.quota_exempt = tool not in TOOLS  # a quota counts tools/call only (§17)
    if tool in TOOLS and (challenge := scope_challenge(request, key, OPERATIONS_BY_NAME[tool])):
        return rate_limit_headers(request, challenge)
    status, headers, content = _answer(request, key, message, body)
    facts.answered_as = facts.answered_as or jsonrpc_error_answer(content)
    response = HttpResponse(content, status=status)
    for name, value in headers:
        if name.lower() not in (b"content-length",):
            response[name.decode("latin-1")] = value.decode("latin-1")
    return rate_limit_headers(request, response)
