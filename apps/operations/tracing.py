"""OpenTelemetry traces (OTEL_EXPORTER_OTLP_ENDPOINT, or its _TRACES_ twin, set): a server span
for every request but scrapes and probes, named by its route and carrying its Request-Id, and
a child span for each database query (the key lookup's prepared statement included) and Redis
command; an MCP request's method and tool (`mcp.method.name`, `gen_ai.tool.name`).

config/wsgi.py imports this module only when tracing_switch says traces are wanted: otherwise
nothing of OpenTelemetry is loaded and no request pays for it. The exporter is the SDK's
OTLP/HTTP one (or the console's, OTEL_TRACES_EXPORTER=console), configured by the standard
OTEL_* variables (endpoint, headers, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES). The
instrumentation is our own, a few lines on Django's and redis-py's hooks: the contrib packages
(opentelemetry-instrumentation-django and the others) pin an older opentelemetry-api than the
one the MCP SDK brings.
"""

import functools
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from apps.common.spans import span_setter_install

TRACER = "gatehouse"
# Scrapes and probes: most of a quiet server's requests, and nothing anyone traces.
UNTRACED = frozenset({"/metrics", "/livez", "/readyz", "/healthz"})
_tracer: trace.Tracer | None = None
_undo: list[Callable[[], None]] = []


def tracing_start(exporter: SpanExporter | None = None) -> None:
    """Send spans to `exporter` (at once, for tests), or as OTEL_TRACES_EXPORTER says: in
    batches over OTLP/HTTP (the default), or to standard output (`console`); hook the
    database and Redis. OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name the service."""
    global _tracer
    name = os.environ.get("OTEL_SERVICE_NAME") or "gatehouse"
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    elif os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    _tracer = provider.get_tracer(TRACER)
    _hook_database()
    _hook_redis()
    span_setter_install(_set_on_current_span)
    _undo.append(lambda: span_setter_install(None))


def _set_on_current_span(attributes: dict[str, str]) -> None:
    span = trace.get_current_span()
    for name, value in attributes.items():
        span.set_attribute(name, value)


def tracing_stop() -> None:
    """Unhook the database and Redis (for tests)."""
    global _tracer
    while _undo:
        _undo.pop()()
    _tracer = None


def traced(application: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """The WSGI `application` with a server span around each request, continuing the caller's
    trace (traceparent), with the answer's status and Request-Id."""

    def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        assert _tracer is not None, "tracing_start() first"
        carrier = {
            k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k[:5] == "HTTP_"
        }
        method, path = environ.get("REQUEST_METHOD", "GET"), environ.get("PATH_INFO", "/")
        if path in UNTRACED:
            return application(environ, start_response)
        route = http_route(path)
        with _tracer.start_as_current_span(
            f"{method} {route}" if route else method,
            context=propagate.extract(carrier),
            kind=SpanKind.SERVER,
        ) as span:
            span.set_attribute("http.request.method", method)
            if route:
                span.set_attribute("http.route", route)

            def answered(status: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
                code = int(status.split(" ", 1)[0])
                span.set_attribute("http.response.status_code", code)
                if code >= 500:
                    span.set_status(Status(StatusCode.ERROR))
                for name, value in headers:
                    if name.lower() == "request-id":
                        span.set_attribute("gatehouse.request_id", value)
                return start_response(status, headers, *rest)

            result = application(environ, answered)
            try:
                return list(result)  # the body's time inside the span
            finally:
                if hasattr(result, "close"):
                    result.close()  # Django's request_finished: connections given back

    return wsgi


@functools.lru_cache(maxsize=1024)
def _route_of(path: str) -> str | None:
    from django.urls import Resolver404, resolve

    try:
        match = resolve(path)
    except Resolver404:
        return None
    route = _CONVERTER.sub(r"{\1}", match.route)
    return "/" + route.lstrip("^").rstrip("$")


_CONVERTER = re.compile(r"<(?:\w+:)?(\w+)>")


def http_route(path: str) -> str | None:
    """The route template a path matched (`/api/v1/keys/{key_id}`), or None for a path no
    route takes. A span never carries the path itself: a key pasted into a URL would reach
    the traces whole (issue 49)."""
    if len(path) > 2000:
        return None
    return _route_of(path)


def _hook_database() -> None:
    """Every connection's statements: those opened from now on, and this thread's open ones."""
    from django.db import connections
    from django.db.backends.signals import connection_created

    def wrap(sender: Any = None, connection: Any = None, **kwargs: Any) -> None:
        if _query_span not in connection.execute_wrappers:
            connection.execute_wrappers.append(_query_span)

    connection_created.connect(wrap, weak=False, dispatch_uid="gatehouse-tracing")
    for connection in connections.all(initialized_only=True):
        wrap(connection=connection)

    def unwrap() -> None:
        connection_created.disconnect(dispatch_uid="gatehouse-tracing")
        for connection in connections.all(initialized_only=True):
            if _query_span in connection.execute_wrappers:
                connection.execute_wrappers.remove(_query_span)

    _undo.append(unwrap)


def _query_span(
    execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
) -> Any:
    """A client span per statement: its text (placeholders, never the parameters)."""
    assert _tracer is not None
    vendor = context["connection"].vendor
    words = sql.split(None, 1)
    with _tracer.start_as_current_span(words[0] if words else "SQL", kind=SpanKind.CLIENT) as span:
        span.set_attribute("db.system.name", vendor)
        span.set_attribute("db.query.text", sql[:2000])
        return execute(sql, params, many, context)


def _hook_redis() -> None:
    import redis

    if getattr(redis.Redis.execute_command, "gatehouse_traced", False):
        return
    command = redis.Redis.execute_command

    def execute_command(self: Any, *args: Any, **options: Any) -> Any:
        with _redis_span(str(args[0]) if args else "redis"):
            return command(self, *args, **options)  # type: ignore[no-untyped-call]

    execute_command.gatehouse_traced = True  # type: ignore[attr-defined]
    redis.Redis.execute_command = execute_command  # type: ignore[method-assign]
    pipeline = redis.client.Pipeline.execute
    _undo.append(lambda: setattr(redis.Redis, "execute_command", command))
    _undo.append(lambda: setattr(redis.client.Pipeline, "execute", pipeline))

    def execute(self: Any, *args: Any, **options: Any) -> Any:
        with _redis_span("pipeline"):
            return pipeline(self, *args, **options)

    redis.client.Pipeline.execute = execute  # type: ignore[method-assign]


@contextmanager
def _redis_span(name: str) -> Iterator[None]:
    """Only the command's name: its arguments hold keys' ids and log entries."""
    assert _tracer is not None
    with _tracer.start_as_current_span(name, kind=SpanKind.CLIENT) as span:
        span.set_attribute("db.system.name", "redis")
        yield
