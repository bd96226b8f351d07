"""Traces: a server span per request with its Request-Id, the database's queries and Redis'
commands inside it; and nothing of OpenTelemetry loaded without OTEL_EXPORTER_OTLP_ENDPOINT."""

import subprocess
import sys
import threading
from wsgiref.util import setup_testing_defaults

import pytest
from django.core.wsgi import get_wsgi_application

from tests.common.test_logging import ROOT
from tests.factories import make_key


@pytest.fixture
def spans():
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from apps.operations import tracing

    exporter = InMemorySpanExporter()
    tracing.tracing_start(exporter)
    yield exporter
    tracing.tracing_stop()
    exporter.clear()


def call(application, path: str, **headers: str) -> tuple[str, bytes]:
    environ: dict = {"PATH_INFO": path, "SERVER_NAME": "127.0.0.1", "HTTP_HOST": "127.0.0.1"}
    environ |= {f"HTTP_{k.upper()}": v for k, v in headers.items()}
    setup_testing_defaults(environ)
    answer = {}

    def start_response(status, headers, exc_info=None):
        answer["status"], answer["headers"] = status, dict(headers)

    body = b"".join(application(environ, start_response))
    return answer["status"], answer["headers"], body


@pytest.mark.django_db(transaction=True)
def test_a_request_is_a_server_span_with_its_request_id_and_its_queries(spans, with_redis):
    from apps.operations.tracing import traced

    created = make_key()
    application = traced(get_wsgi_application())
    parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    status, headers, _ = call(
        application, "/api/v1/workspace",
        AUTHORIZATION=f"Bearer {created.secret}", TRACEPARENT=parent,
    )  # fmt: skip
    assert status.startswith("200")
    finished = spans.get_finished_spans()
    server = next(s for s in finished if s.kind.name == "SERVER")
    assert server.attributes["gatehouse.request_id"] == headers["Request-Id"]
    assert server.attributes["http.response.status_code"] == 200
    assert format(server.context.trace_id, "032x") == "0af7651916cd43dd8448eb211c80319c"
    children = [s for s in finished if s.parent and s.parent.span_id == server.context.span_id]
    systems = {s.attributes.get("db.system.name") for s in children}
    assert {"redis"} < systems and systems & {"postgresql", "sqlite"}
    assert all(created.secret not in str(dict(s.attributes)) for s in finished)


def test_without_the_endpoint_nothing_of_opentelemetry_is_loaded():
    code = (
        "import sys, config.wsgi\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry.sdk')"
        " or m == 'apps.operations.tracing'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
        env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.django_db(transaction=True)
def test_a_span_names_the_route_never_the_path_so_a_key_pasted_into_a_url_stays_out(spans):
    from apps.operations.tracing import traced

    created = make_key()
    application = traced(get_wsgi_application())
    call(application, f"/api/v1/keys/{created.key.pk}", AUTHORIZATION=f"Bearer {created.secret}")
    call(application, f"/api/v1/keys/{created.secret}")  # pasted where an id goes
    call(application, f"/dashboard/{created.secret}/")
    finished = spans.get_finished_spans()
    servers = [s for s in finished if s.kind.name == "SERVER"]
    assert len(servers) == 3
    assert servers[0].attributes["http.route"] == "/api/v1/keys/{keyId}"
    assert servers[0].name == "GET /api/v1/keys/{keyId}"
    assert all("url.path" not in s.attributes for s in servers)
    exported = "".join(s.to_json() for s in finished)
    assert created.secret not in exported
    assert created.secret[-12:] not in exported


@pytest.mark.django_db(transaction=True)
def test_the_key_lookup_scrapes_and_mcp_follow_opentelemetry_s_conventions(spans, monkeypatch):
    from apps.operations.tracing import traced

    created = make_key(scopes=["pages:read"])
    spans.clear()  # the key's INSERT names the hash's column too
    application = traced(get_wsgi_application())
    call(application, "/api/v1/workspace", AUTHORIZATION=f"Bearer {created.secret}")
    call(application, "/metrics")
    call(application, "/livez")
    finished = spans.get_finished_spans()
    servers = [s for s in finished if s.kind.name == "SERVER"]
    assert [s.name for s in servers] == ["GET /api/v1/workspace"]  # no span for scrapes
    queries = [s for s in finished if s.attributes.get("db.query.text")]
    # The key lookup (a prepared statement on PostgreSQL, outside Django's cursor) has its span.
    [server] = servers
    lookups = [
        s
        for s in queries
        if s.attributes["db.query.text"].startswith("SELECT")
        and '"secret_hash" = ' in s.attributes["db.query.text"]
    ]
    assert len(lookups) == 1 and lookups[0].parent.span_id == server.context.span_id
    assert all(s.name.strip() and s.name.split()[0] == s.name for s in queries)

    spans.clear()
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_pages"}}'
    environ_extra = {
        "AUTHORIZATION": f"Bearer {created.secret}",
        "ACCEPT": "application/json, text/event-stream",
        "MCP_PROTOCOL_VERSION": "2025-06-18",
    }
    # In a thread of its own, as a server's request thread: an earlier test of this process
    # may have left an event loop running in this one, and the MCP runtime runs its own.
    answered: list = []
    thread = threading.Thread(
        target=lambda: answered.append(call_with_body(application, "/mcp", body, **environ_extra))
    )
    thread.start()
    thread.join(60)
    status = answered[0][0]
    assert status.startswith("200")
    [server] = [s for s in spans.get_finished_spans() if s.kind.name == "SERVER"]
    assert server.attributes["mcp.method.name"] == "tools/call"
    assert server.attributes["gen_ai.tool.name"] == "list_pages"


def call_with_body(application, path: str, body: bytes, **headers: str):
    import io

    environ: dict = {
        "PATH_INFO": path,
        "REQUEST_METHOD": "POST",
        "SERVER_NAME": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
    }
    environ |= {f"HTTP_{k.upper()}": v for k, v in headers.items()}
    setup_testing_defaults(environ)
    answer = {}

    def start_response(status, headers, exc_info=None):
        answer["status"], answer["headers"] = status, dict(headers)

    out = b"".join(application(environ, start_response))
    return answer["status"], answer["headers"], out


def test_opentelemetry_s_variables_decide_whether_and_how_traces_go(monkeypatch):
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from apps.operations import tracing
    from apps.operations.tracing_switch import tracing_wanted

    assert not tracing_wanted({})
    assert tracing_wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert tracing_wanted({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"})
    assert tracing_wanted({"OTEL_TRACES_EXPORTER": "console"})
    assert not tracing_wanted({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "x"})
    assert not tracing_wanted({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "x"})

    monkeypatch.setenv("OTEL_SERVICE_NAME", "gatehouse-eu")
    exporter = InMemorySpanExporter()
    tracing.tracing_start(exporter)
    try:
        with tracing._tracer.start_as_current_span("probe"):
            pass
    finally:
        tracing.tracing_stop()
    [span] = exporter.get_finished_spans()
    assert span.resource.attributes["service.name"] == "gatehouse-eu"


def test_the_console_exporter_prints_spans_when_asked(tmp_path):
    code = (
        "import config.wsgi\n"
        "from tests.operations.test_tracing import call\n"
        "call(config.wsgi.application, '/api/v1/workspace')\n"
    )
    env = {
        "PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "true",
        "OTEL_TRACES_EXPORTER": "console", "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
    }  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert '"name": "GET /api/v1/workspace"' in done.stdout
