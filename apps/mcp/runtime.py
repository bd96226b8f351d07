"""How /mcp runs the official SDK without paying for a session manager and a loop per call.

Starting the SDK's Streamable HTTP session manager on a fresh event loop cost about 4 ms a call
(asgiref's async_to_sync makes a thread and a loop each time), thirty times what a tool does.

- A plain `tools/call` of one of our tools needs neither: `direct_tool_call` (direct_call.py)
  runs it in the request's thread, with no loop at all.
- Other plain calls (`tools/list`, `ping`, an unusual `tools/call`): `mcp_answer_one`
  (single_exchange.py) hands the message to the SDK's single-exchange kernel (`serve_one`,
  what its transport runs for each message) on the request thread's own event loop, kept
  between requests. The SDK validates the call and calls the tool's handler; the handler asks
  for the operation to be run, and the loop steps aside (it stops, the request's thread runs
  the operation with no loop running, then goes on).
- Everything else (`initialize`, notifications, what the kernel refuses): `mcp_answer` gives it
  to the SDK's whole transport. Each process starts, on its first MCP request, a daemon thread
  running one asyncio loop, and in it one stateless session manager serving one `Server`. The
  request hands its message to that loop and waits. The per-request facts (the key, the client
  address) travel in a context variable, which the SDK's tasks inherit from the request's
  coroutine.

Django's ORM is synchronous, per thread, and refuses to run under a running event loop, so tool
handlers never run the operation inside the loop: on the whole transport they submit it to the
request's own thread through an asgiref `CurrentThreadExecutor`, which the waiting request
thread drains; on the single exchange the loop steps aside as above. Either way the operation
uses the request's database connection, exactly as the API does.

A forked worker (gunicorn) does not inherit the loop's thread: the runtime notices the new
process id and starts its own."""

import asyncio
import contextlib
import contextvars
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from asgiref.current_thread_executor import CurrentThreadExecutor
from django.conf import settings
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from apps.api_keys.models import ApiKey
from apps.metering.facts import RequestFacts

T = TypeVar("T")
Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


InRequestThread = Callable[..., Awaitable[Any]]


@dataclass
class McpCall:
    """What one /mcp request's handlers need: its key, its client address, and the way back to
    the request's thread (`in_request_thread(function, *args)`: run it there, wait here)."""

    key: ApiKey
    ip: str | None
    in_request_thread: InRequestThread
    facts: RequestFacts | None = None  # the request's, for what the tool adds to its log entry
    ran_in_request_thread: bool = False  # an operation ran: never answer it twice

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """Run `function(*args)` in the request's own thread, with no loop running there."""
        self.ran_in_request_thread = True
        result: T = await self.in_request_thread(function, *args)
        return result


current_call: contextvars.ContextVar[McpCall] = contextvars.ContextVar("mcp_call")

# What the server's lifespan holds: nothing, but the same object for the transport (which
# enters the lifespan once per process) and the single exchange (`serve_one` takes it).
LIFESPAN_STATE: dict[str, Any] = {}


@contextlib.asynccontextmanager
async def server_lifespan(_server: Server) -> AsyncIterator[dict[str, Any]]:
    yield LIFESPAN_STATE  # the MCP server's lifespan (`Server(lifespan=…)`) keeps no state


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
    server: Server,
    key: ApiKey,
    ip: str | None,
    scope: dict[str, Any],
    body: bytes,
    facts: RequestFacts | None = None,
) -> Answer:
    """Answer one /mcp request with the process's session manager: (status, headers, body).

    This thread waits for the answer while running whatever the tool handlers send back to it.
    """
    loop, manager = _runtime.started(server)
    executor = CurrentThreadExecutor(None)

    async def in_request_thread(function: Callable[..., T], *args: Any) -> T:
        return await asyncio.wrap_future(executor.submit(function, *args))

    async def serve() -> Answer:
        current_call.set(McpCall(key=key, ip=ip, in_request_thread=in_request_thread, facts=facts))
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
