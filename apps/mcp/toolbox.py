"""The operations an MCP client may call, as tools, and the SDK server that calls them.

The SDK validates a tools/call and calls `ToolBox.call` here, which runs the operation through
`operation_run` in the request's own thread (apps/mcp/runtime.py), so it uses the request's
database connection and the same services and refusals as the API (apps/api/door_steps.py).
"""

import json
from collections.abc import Iterable
from typing import Any, cast

import mcp_types as types
from mcp.server.lowlevel.server import Server

from apps.api.door_steps import REFUSED, object_of, operation_run, refusal_of
from apps.api.errors import STATUS_BY_REASON
from apps.api.operations import Call, Operation
from apps.api_keys.auth import api_key_authorize, key_may
from apps.api_keys.models import ApiKey
from apps.audit.services import Actor
from apps.common.validation import InvalidInput
from apps.metering.facts import RequestFacts

from .runtime import current_call, server_lifespan
from .scopes import step_up_scopes, step_up_tool
from .tools import tool_for

INSTRUCTIONS = (
    "Gatehouse is the workspace API of a course, product and community platform. The key this "
    "client was configured with decides the workspace and which tools are listed: call "
    "get_workspace to see the workspace and the key's scopes. Ids come from the list tools."
)


# A tool's answer is handed to the SDK as the CallToolResult's wire form, a plain dict: the
# SDK validates and shapes it once on its way out (serialize_server_result), where a model
# built here would be validated, then dumped, first (a tenth of MCP's cost over the API's).
ToolAnswer = dict[str, Any]


def _tool_error(reason: str, message: str, facts: RequestFacts | None = None) -> ToolAnswer:
    # Text only: structured content would have to match the tool's output schema (the record),
    # and clients that check it, the TypeScript SDK and the Inspector among them, refuse it.
    if facts is not None:  # recorded as the API answers the same refusal
        facts.answered_as = (STATUS_BY_REASON[reason], reason)
    text = f"{reason}: {message}"
    return {"content": [{"type": "text", "text": text}], "isError": True, "resultType": "complete"}


class ToolBox:
    """The tools of one list of operations and the one SDK server of this process that lists
    and calls them; the request's key reaches its handlers through `runtime.current_call`."""

    def __init__(self, operations: Iterable[Operation]) -> None:
        # Operations that hand out a secret (creating and rolling keys) are not tools: secrets
        # never pass through an assistant's context.
        self.operations = {op.name: op for op in operations if op.mcp}
        self.tools: dict[str, types.Tool] = {
            name: tool_for(op) for name, op in self.operations.items()
        }
        self.server = Server(
            "gatehouse",
            version="1.0.0",
            title="Gatehouse",
            instructions=INSTRUCTIONS,
            lifespan=server_lifespan,
            on_list_tools=self._list_tools,
            # The SDK's runner takes a handler's dict as the result's wire form (_dump_result);
            # its Server's annotation names the model only.
            on_call_tool=cast(Any, self._call_tool),
        )
        self.server.middleware = []  # the SDK's OpenTelemetry span per message: no exporter here

    def call(
        self,
        key: ApiKey,
        ip: str | None,
        name: str,
        arguments: dict[str, Any],
        facts: RequestFacts | None = None,
    ) -> ToolAnswer:
        """Run one tool for `key`: the same authorization, validation and service as the API.
        The object it creates or acts on goes to the request's `facts`, for the request log."""
        op = self.operations.get(name)
        if op is None:
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
        except REFUSED as error:
            failure = refusal_of(error)
            return _tool_error(failure.reason, failure.message, facts)
        text = json.dumps(record, ensure_ascii=False)
        return {
            "content": [{"type": "text", "text": text}],
            "structuredContent": record,
            "isError": False,
            "resultType": "complete",
        }

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        """The tools the request's key may call, and for a connected app those it may step up
        to, saying so."""
        key = current_call.get().key
        tools = []
        for name, tool in self.tools.items():
            needs = self.operations[name].needs
            if key_may(key, needs):
                tools.append(tool)
            elif step_up_scopes(key, needs) is not None:
                tools.append(step_up_tool(tool, needs))
        return types.ListToolsResult(tools=tools)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> ToolAnswer:
        call = current_call.get()
        # In the request's own thread, with no loop running: Django's ORM is synchronous.
        arguments = params.arguments or {}
        return await call.run(self.call, call.key, call.ip, params.name, arguments, call.facts)
