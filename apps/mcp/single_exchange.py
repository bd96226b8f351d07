"""Plain MCP calls (`tools/list`, `tools/call`, `ping`) answered by the SDK's single-exchange
kernel (`serve_one`, what its transport runs for each message) on the request thread's own
event loop, kept between requests: no session manager, streams or tasks around it (runtime.py
says why). The handler asks for the operation to be run, and the loop steps aside: it stops,
the request's thread runs the operation with no loop running (so Django's ORM may), then it
goes on."""

import asyncio
import json
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
from mcp.server.connection import Connection
from mcp.server.lowlevel.server import Server
from mcp.server.runner import serve_one
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from pydantic import ValidationError

from apps.api_keys.models import ApiKey
from apps.metering.facts import RequestFacts

from .runtime import LIFESPAN_STATE, Answer, InRequestThread, McpCall, current_call

T = TypeVar("T")


@dataclass
class _OneExchange:
    """The dispatch context of one stateless JSON request: no back-channel to the client (the
    answer is the one JSON-RPC reply), notifications dropped, as the SDK's own stateless entry
    has it. Structurally the SDK's `DispatchContext`."""

    transport: TransportContext
    request_id: Any
    message_metadata: ServerMessageMetadata
    can_send_request: bool = False
    # Never set: a stateless exchange has no channel a cancellation could come in on.
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)

    async def send_raw_request(self, method: str, params: Any, opts: Any = None) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Any, opts: Any = None) -> None:
        return None

    async def progress(self, progress: float, total: Any = None, message: Any = None) -> None:
        return None


class NeedsTransport(Exception):
    """The SDK rejected the request before any handler ran (unknown method, bad params): the
    full transport answers it, with exactly the SDK's own error."""


_thread_loops = threading.local()


def _thread_loop() -> asyncio.AbstractEventLoop:
    """This thread's own event loop, reused by its requests; it runs only while a request
    waits on it, so Django's ORM, used before and after, never sees it running."""
    loop: asyncio.AbstractEventLoop | None = getattr(_thread_loops, "loop", None)
    if loop is None or loop.is_closed():
        loop = _thread_loops.loop = asyncio.new_event_loop()
    return loop


def _run_stepping_aside(make: Callable[[InRequestThread], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine `make(in_request_thread)` on this thread's loop. When it awaits
    `in_request_thread(function, *args)`, the loop stops, this thread runs the function with
    no loop running (so Django's ORM may), and the loop goes on with its result."""
    loop = _thread_loop()
    waiting: list[tuple[Callable[..., Any], tuple[Any, ...], asyncio.Future[Any]]] = []

    async def in_request_thread(function: Callable[..., Any], *args: Any) -> Any:
        future = loop.create_future()
        waiting.append((function, args, future))
        loop.stop()  # run_forever returns once this step is done
        return await future

    task = loop.create_task(make(in_request_thread))
    task.add_done_callback(lambda _task: loop.stop())
    while not task.done():
        loop.run_forever()
        while waiting:
            function, args, future = waiting.pop()
            try:
                future.set_result(function(*args))
            except Exception as error:
                future.set_exception(error)
    return task.result()


def mcp_answer_one(
    server: Server,
    key: ApiKey,
    ip: str | None,
    message: dict[str, Any],
    protocol_version: str,
    headers: dict[str, str],
    facts: RequestFacts | None = None,
) -> Answer:
    """Answer one JSON-RPC request with the SDK's single-exchange kernel (`serve_one`), the
    part of the transport that runs the server's handlers, without the transport's streams and
    tasks around it. Raises NeedsTransport when the SDK refuses the request itself, before any
    operation ran."""
    call = McpCall(key=key, ip=ip, in_request_thread=_unset_in_request_thread, facts=facts)

    async def one(in_request_thread: InRequestThread) -> dict[str, Any]:
        call.in_request_thread = in_request_thread
        current_call.set(call)
        exchange = _OneExchange(
            transport=TransportContext(
                kind="streamable-http", can_send_request=False, headers=headers
            ),
            request_id=message["id"],
            message_metadata=ServerMessageMetadata(),
        )
        return await serve_one(
            server,
            exchange,
            message["method"],
            message.get("params"),
            connection=Connection.from_envelope(protocol_version, None, None),
            lifespan_state=LIFESPAN_STATE,
        )

    try:
        result = _run_stepping_aside(one)
    except (MCPError, ValidationError) as refused:
        if call.ran_in_request_thread:
            raise  # the operation ran: never run it twice through the transport
        raise NeedsTransport from refused
    # The result is serve_one's wire form already: the envelope around it needs no model.
    reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    body = json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode()
    return 200, [(b"content-type", b"application/json")], body


async def _unset_in_request_thread(function: Callable[..., Any], *args: Any) -> Any:
    raise RuntimeError("in_request_thread is set when the exchange starts")
