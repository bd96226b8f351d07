import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.core.cache import caches
from django.test import override_settings

from apps.webhooks.destinations import delivery_clients_close

from .client import Client
from .factories import MembershipFactory, UserFactory, WorkspaceFactory, make_key, owner_of
from .process_state import process_state_reset

# The test database is made by `migrate`: no schedule tick in it; tests run jobs themselves.
settings.JOBS_START_ON_MIGRATE = False


@pytest.fixture(autouse=True)
def _fast_and_isolated(settings):
    # Argon2 is deliberately slow; tests do not need it to be.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.SIGN_UP_MIN_SECONDS = 0  # the sign-up timing test sets its own
    settings.USAGE_FLUSH_SECONDS = 0  # every request writes its stamps and counts at its end
    process_state_reset()
    yield
    delivery_clients_close()  # a kept connection would hold a live server's thread open
    process_state_reset()


@pytest.fixture
def client() -> Client:
    """pytest-django's client, as tests/client.py signs in (sudo mode counts at once)."""
    return Client()


# The cast most tests share, as healthchecks has alice, bob and charlie: Acme and its people
# (the owner signed in on `client`), and Globex, a workspace none of them is in. A module that
# needs another cast defines its own fixture of the same name.
@pytest.fixture
def workspace(db):
    """Acme, where most tests happen."""
    return WorkspaceFactory(name="Acme")


@pytest.fixture
def owner(client, workspace):
    """Acme's owner, owner@acme.test, signed in on `client`."""
    user = owner_of(workspace, email="owner@acme.test")
    client.force_login(user)
    return user


@pytest.fixture
def admin(workspace):
    """An admin of Acme, admin@acme.test (not signed in)."""
    user = UserFactory(email="admin@acme.test")
    MembershipFactory(workspace=workspace, user=user, role="admin")
    return user


@pytest.fixture
def stranger(db):
    """The owner of Globex, stranger@globex.test, who has no place in Acme."""
    return owner_of(WorkspaceFactory(name="Globex"), email="stranger@globex.test")


@pytest.fixture
def key(db):
    """A key holding every scope, with its secret."""
    return make_key()


def auth(secret: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}


# CI runs the suite three times: on SQLite (the README's command, every test that needs no
# PostgreSQL), on PostgreSQL, and through PgBouncer. The last two run what reaches the database
# and leave out what ran on SQLite and is about something else, the same on any database: the
# development server (always on SQLite, whatever DATABASE_URL says), the pages in Chromium (their
# views' queries run on PostgreSQL in the views' own tests), clients nobody here wrote and the CLI
# (each speaks HTTP to the same views), answers on the wire, a syslog server, log lines, the
# keychain.
RAN_ON_SQLITE = (
    "tests/browser/",
    "tests/cli/",
    "tests/common/test_dev_run.py",
    "tests/demo/test_dev_server.py",
    "tests/common/test_logging.py",
    "tests/common/test_log_redaction.py",
    "tests/operations/test_json_logs.py",
    "tests/api/test_generated_clients.py",
    "tests/api/test_wire.py",
    "tests/mcp/test_clients.py",
    "tests/mcp/test_node_clients.py",
    "tests/mcp/test_conformance.py",
    "tests/oauth/test_clients.py",
    "tests/oauth/test_authlib_client.py",
    "tests/oauth/test_mcp_sdk_client.py",
    "tests/audit_streams/test_syslog_stream.py",
)
# And through PgBouncer, what never reaches the pool: spans are written as on PostgreSQL.
NOT_ABOUT_THE_POOL = ("tests/operations/test_tracing.py",)
TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    from django.conf import settings

    engine = settings.DATABASES["default"]["ENGINE"]
    if "postgresql" not in engine:
        skip = pytest.mark.skip(reason="needs PostgreSQL: set DATABASE_URL to run it")
        for item in items:
            if "postgres" in item.keywords:
                item.add_marker(skip)
    if "sqlite" in engine:
        return
    ran = pytest.mark.skip(reason="ran on SQLite; not about the database (tests/conftest.py)")
    pooled = os.environ.get("GATEHOUSE_PGBOUNCER")
    for item in items:
        path = "tests/" + Path(str(item.fspath)).resolve().relative_to(TESTS).as_posix()
        if path.startswith(RAN_ON_SQLITE) or "browser" in item.keywords:
            item.add_marker(ran)
        elif pooled and path.startswith(NOT_ABOUT_THE_POOL):
            item.add_marker(pytest.mark.skip(reason="ran on PostgreSQL; no pooled path here"))


def run_tasks(worker_id: str = "test-worker") -> int:
    """Run every task that is due, as `manage.py db_worker --batch` does; how many ran. The
    worker's own connection recycling is left out: in a test the connection is the test's."""
    from unittest import mock

    from django_tasks_db.management.commands import db_worker
    from django_tasks_db.management.commands.db_worker import Worker

    worker = Worker(
        queue_names=["default"],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id=worker_id,
        excluded_queue_names=[],
    )
    with mock.patch.object(db_worker, "close_old_connections", lambda: None):
        worker.run()
    return worker._run_tasks


def batching_worker(worker_id: str = "batch-worker", **options):
    """`manage.py worker`'s batching worker, in this process, to run every task that is due."""
    from apps.jobs.batching import BatchingWorker

    defaults = dict(queue_names=["default"], interval=0, batch=True, backend_name="default")
    defaults |= dict(startup_delay=False, max_tasks=None, excluded_queue_names=[])
    return BatchingWorker(worker_id=worker_id, **(defaults | options))


def run_batched(worker_id: str = "batch-worker") -> int:
    """Run every task that is due as `manage.py worker -- --batch` does; how many ran."""
    from unittest import mock

    from apps.jobs import batching

    worker = batching_worker(worker_id)
    with mock.patch.object(batching, "close_old_connections", lambda: None):
        worker.run()
    return worker._run_tasks


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _redis_process(port: int, *persistence: str) -> "subprocess.Popen[bytes]":
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed")
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", *persistence],
        stdout=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return process
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("redis-server did not start")


@pytest.fixture
def redis_server():
    """A private Redis on a free port, keeping nothing on disk, that a test can stop and start
    again."""
    port = _free_port()
    processes = [_redis_process(port, "--appendonly", "no")]

    def start():
        processes.append(_redis_process(port, "--appendonly", "no"))

    def stop():
        processes[-1].terminate()
        processes[-1].wait(5)

    yield f"redis://127.0.0.1:{port}/0", start, stop
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait(5)


@pytest.fixture
def persistent_redis(tmp_path):
    """A private Redis with the production setting of docs/operations.md (an append-only file,
    written on every change), and a way to crash it (SIGKILL) and start it again."""
    port = _free_port()
    persistence = ("--appendonly", "yes", "--appendfsync", "always", "--dir", str(tmp_path))
    processes = [_redis_process(port, *persistence)]

    def crash_and_restart():
        processes[-1].kill()
        processes[-1].wait(5)
        processes.append(_redis_process(port, *persistence))

    yield f"redis://127.0.0.1:{port}/0", crash_and_restart
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait(5)


@pytest.fixture
def with_redis(redis_server):
    """The app configured with that Redis; undone before the Redis goes away."""
    url, start, stop = redis_server
    with _app_on_redis(url):
        yield start, stop


@contextmanager
def _app_on_redis(url: str) -> Iterator[None]:
    redis_cache = {
        "BACKEND": "apps.common.cache.FailOpenRedisCache",  # as config/settings.py sets it
        "LOCATION": url,
        "OPTIONS": {"socket_connect_timeout": 0.25, "socket_timeout": 0.25},
    }
    with override_settings(REDIS_URL=url, CACHES={"default": redis_cache}):
        yield
        caches["default"].close()


@pytest.fixture
def with_persistent_redis(persistent_redis):
    """The app configured with a persistent Redis; yields its crash_and_restart."""
    url, crash_and_restart = persistent_redis
    with _app_on_redis(url):
        yield crash_and_restart
