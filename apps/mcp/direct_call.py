"""The call clients make most, a `tools/call` of one of our tools, answered in the request's
own thread, without the SDK's kernel around the tool; its answer is held to the SDK's.

Measured in process (2026-12-03): the SDK's single-exchange kernel (`serve_one`: two turns of
an event loop, a shielded cancel scope, its request context, the params validated into models)
spent about 200 µs around a tool that takes about 80 µs, and its shaping of the result
(`serialize_server_result`, a validation of the whole result against the version's surface)
another 35 µs: most of what a tools/call cost over the same operation on the API. The kernel
adds nothing such a call needs: the tool validates its own arguments and words its own errors
(`ToolBox.call`), and its answer is already the result's wire form. The one thing the SDK's
shaping changes for the protocol versions served here (those with the initialize handshake) is
dropping `resultType`, the 2026 protocol's, which their surfaces do not know.

Only a call this certainly is takes this way: params holding a `name` that is one of the
toolbox's tools and, if anything else, `arguments` as a JSON object. Anything else (a `_meta`,
a task, arguments that are not an object, an unknown tool) goes to the kernel, which answers
it and words its own errors. tests/mcp/test_direct_call.py holds each answer against the
kernel's and the whole transport's, for every protocol version, so a change of the SDK's
shaping is seen there.
"""

import json
from typing import Any

from apps.api_keys.models import ApiKey
from apps.metering.facts import RequestFacts

from .runtime import Answer
from .toolbox import ToolBox

_PLAIN_PARAMS = frozenset({"name", "arguments"})


def direct_tool_call(
    toolbox: ToolBox,
    key: ApiKey,
    message: dict[str, Any],
    facts: RequestFacts,
) -> Answer | None:
    """The answer to `message` when it is a plain tools/call of one of `toolbox`'s tools, run
    in this thread; None for any other message, which the SDK's kernel is to answer. Asked
    only of a plain call at a version with the handshake (`single_exchange_version`)."""
    params = message.get("params")
    if message.get("method") != "tools/call" or not isinstance(params, dict):
        return None
    name, arguments = params.get("name"), params.get("arguments", {})
    if params.keys() - _PLAIN_PARAMS or name not in toolbox.tools or type(arguments) is not dict:
        return None
    answer = toolbox.call(key, facts.client_ip, name, arguments, facts)
    result = {field: value for field, value in answer.items() if field != "resultType"}
    reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    body = json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode()
    return 200, [(b"content-type", b"application/json")], body
