"""How /mcp runs the official SDK without paying for a session manager and a loop per call.

Starting the SDK's Streamable HTTP session manager on a fresh event loop cost about 4 ms a call
(asgiref's async_to_sync makes a thread and a loop each time), thirty times what a tool does.

- Plain calls (`tools/list`, `tools/call`, `ping`): `mcp_answer_one` hands the message to the
  SDK's single-exchange kernel (`serve_one`, what its transport runs for each message) on the
  request thread's own event loop, kept between requests. A tools/call's operation runs first,
  in the request's thread, and the SDK's handler answers with its result.
- Everything else (`initialize`, notifications, what the kernel refuses): `mcp_answer` gives it
  to the SDK's whole transport. Each process starts, on its first MCP request, a daemon thread
  running one asyncio loop, and in it one stateless session manager serving one `Server`. The
  request hands its message to that loop and waits. The per-request facts (the key, the client
  address) travel in a context variable, which the SDK's tasks inherit from the request's
  coroutine.

Django's ORM is synchronous and per thread, so tool handlers do not run the operation in the
loop's thread: they submit it to the request's own thread through an asgiref
`CurrentThreadExecutor`, which the waiting request thread drains. The operation therefore uses the
request's database connection, exactly as the API does.

A forked worker (gunicorn) does not inherit the loop's thread; the runtime notices the new
process id and starts its own.
"""

import asyncio
import contextvars
import os
import threading
from collections.abc import Callable, MutableMapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from asgiref.current_thread_executor import CurrentThreadExecutor
from django.conf import settings
from mcp.server.connection import Connection
from mcp.server.lowlevel.server import Server
from mcp.server.runner import serve_one
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import CallToolRequestParams, JSONRPCResponse
from pydantic import ValidationError

from apps.api_keys.models import ApiKey

T = TypeVar("T")
Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


@dataclass(frozen=True)
class McpCall:
    """What one /mcp request's handlers need: its key, its client address, and the way back to
    the request's thread."""

    key: ApiKey
    ip: str | None
    executor: CurrentThreadExecutor | None
    # A tools/call's result, when it was run before the SDK was asked (the single exchange).
    tool_result: Any = None

    async def in_request_thread(self, function: Callable[..., T], *args: Any) -> T:
        """Run `function(*args)` in the request's own thread and wait for it here."""
        assert self.executor is not None
        return await asyncio.wrap_future(self.executor.submit(function, *args))


current_call: contextvars.ContextVar[McpCall] = contextvars.ContextVar("mcp_call")


class _Runtime:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pid: int | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.manager: StreamableHTTPSessionManager | None = None

    def started(self, server: Server) -> tuple[asyncio.AbstractEventLoop, Any]:
        """The process's loop and session manager, started on first use."""
        if self.pid != os.getpid():
            with self.lock:
                if self.pid != os.getpid():
                    self._start(server)
                    self.pid = os.getpid()
        assert self.loop is not None and self.manager is not None
        return self.loop, self.manager

    def _start(self, server: Server) -> None:
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, name="mcp-loop", daemon=True).start()
        manager = StreamableHTTPSessionManager(
            app=server,
            json_response=True,
            stateless=True,
            max_request_body_size=settings.API_MAX_BODY_BYTES,
        )
        ready = threading.Event()

        async def hold() -> None:
            async with manager.run():
                ready.set()
                await asyncio.Event().wait()  # for the life of the process

        asyncio.run_coroutine_threadsafe(hold(), loop)
        if not ready.wait(timeout=10):
            raise RuntimeError("The MCP session manager did not start.")
        self.loop, self.manager = loop, manager


_runtime = _Runtime()


def mcp_answer(
    server: Server, key: ApiKey, ip: str | None, scope: dict[str, Any], body: bytes
) -> Answer:
    """Answer one /mcp request with the process's session manager: (status, headers, body).

    This thread waits for the answer while running whatever the tool handlers send back to it.
    """
    loop, manager = _runtime.started(server)
    executor = CurrentThreadExecutor(None)

    async def serve() -> Answer:
        current_call.set(McpCall(key=key, ip=ip, executor=executor))
        return await _serve(manager, scope, body)

    future: Future[Answer] = asyncio.run_coroutine_threadsafe(serve(), loop)
    executor.run_until_future(future)
    return future.result()


async def _serve(manager: Any, scope: dict[str, Any], body: bytes) -> Answer:
    """Answer one HTTP request with the SDK's stateless Streamable HTTP transport."""
    sent_body = False
    disconnected = anyio.Event()
    status = 500
    headers: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await disconnected.wait()  # the client stays connected until the answer is complete
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status, headers = message["status"], list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await manager.handle_request(scope, receive, send)
    disconnected.set()
    return status, headers, b"".join(chunks)


@dataclass
class _OneExchange:
    """The dispatch context of one stateless JSON request: no back-channel to the client (the
    answer is the one JSON-RPC reply), notifications dropped, as the SDK's own stateless entry
    has it. Structurally the SDK's `DispatchContext`."""

    transport: TransportContext
    request_id: Any
    message_metadata: ServerMessageMetadata
    can_send_request: bool = False

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


def mcp_answer_one(
    server: Server,
    key: ApiKey,
    ip: str | None,
    message: dict[str, Any],
    protocol_version: str,
    headers: dict[str, str],
    run_tool: Callable[[ApiKey, str | None, str, dict[str, Any]], Any],
) -> Answer:
    """Answer one JSON-RPC request with the SDK's single-exchange kernel (`serve_one`), the
    part of the transport that runs the server's handlers, without the transport's streams and
    tasks around it. Raises NeedsTransport when the SDK refuses the request itself.

    A tools/call's operation runs first, here in the request's thread (its parameters checked
    with the SDK's own model); the SDK's handler then answers with that result, so the kernel
    runs on this thread's own loop with no hand-off between threads.
    """
    _loop, manager = _runtime.started(server)
    tool_result = None
    if message["method"] == "tools/call":
        try:
            params = CallToolRequestParams.model_validate(message.get("params") or {})
        except ValidationError as refused:
            raise NeedsTransport from refused
        tool_result = run_tool(key, ip, params.name, params.arguments or {})

    async def one() -> dict[str, Any]:
        current_call.set(McpCall(key=key, ip=ip, executor=None, tool_result=tool_result))
        exchange = _OneExchange(
            transport=TransportContext(
                kind="streamable-http", can_send_request=False, headers=headers
            ),
            request_id=message["id"],
            message_metadata=ServerMessageMetadata(),
        )
        return await serve_one(
            server,
            exchange,  # type: ignore[arg-type]
            message["method"],
            message.get("params"),
            connection=Connection.from_envelope(protocol_version, None, None),
            lifespan_state=manager._lifespan_state,
        )

    try:
        result = _thread_loop().run_until_complete(one())
    except (MCPError, ValidationError) as refused:
        if tool_result is not None:
            raise  # the operation ran: never run it twice through the transport
        raise NeedsTransport from refused
    reply = JSONRPCResponse(jsonrpc="2.0", id=message["id"], result=result)
    body = reply.model_dump_json(by_alias=True, exclude_unset=True).encode()
    return 200, [(b"content-type", b"application/json")], body
