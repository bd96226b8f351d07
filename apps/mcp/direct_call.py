"""The call clients make most, a `tools/call` of one of our tools, answered in the request's
own thread, with the SDK's own shaping of the result but without its kernel around the tool.

Measured in process (2026-12-03): the SDK's single-exchange kernel (`serve_one`: two turns of
an event loop, a shielded cancel scope, its request context, the params validated into models)
spent about 200 µs around a tool that takes about 80 µs, most of what a tools/call cost over
the same operation on the API. The kernel adds nothing such a call needs: the tool validates
its own arguments and words its own errors (`ToolBox.call`), and the result's wire form for the
request's protocol version is the SDK's `serialize_server_result`, called here as the kernel
calls it.

Only a call this certainly is takes this way: params holding a `name` that is one of the
toolbox's tools and, if anything else, `arguments` as a JSON object. Anything else (a `_meta`,
a task, arguments that are not an object, an unknown tool) goes to the kernel, which answers
it and words its own errors. tests/mcp/test_direct_call.py holds each answer against the
kernel's and the whole transport's, for every protocol version.
"""

import json
from typing import Any

from mcp_types.methods import serialize_server_result

from apps.api_keys.models import ApiKey
from apps.metering.facts import RequestFacts

from .runtime import Answer
from .toolbox import ToolBox

_PLAIN_PARAMS = frozenset({"name", "arguments"})


def direct_tool_call(
    toolbox: ToolBox,
    key: ApiKey,
    message: dict[str, Any],
    version: str,
    facts: RequestFacts,
) -> Answer | None:
    """The answer to `message` when it is a plain tools/call of one of `toolbox`'s tools, run
    in this thread; None for any other message, which the SDK's kernel is to answer."""
    params = message.get("params")
    if message.get("method") != "tools/call" or not isinstance(params, dict):
        return None
    name, arguments = params.get("name"), params.get("arguments", {})
    if params.keys() - _PLAIN_PARAMS or name not in toolbox.tools or type(arguments) is not dict:
        return None
    answer = toolbox.call(key, facts.client_ip, name, arguments, facts)
    result = serialize_server_result("tools/call", version, answer)
    reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    body = json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode()
    return 200, [(b"content-type", b"application/json")], body
