"""Usage counts through Redis: every request counted in the rate limiter's one script call,
corrected once answered, moved to PostgreSQL exactly once; and an app process killed with
SIGKILL loses none of them."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.conf import settings as django_settings
from django.db.models import Sum

from apps.metering.buffer import usage_flush
from apps.metering.records import REDIS_COUNTS
from apps.request_log.models import RequestLogEntry
from apps.request_log.moving import request_log_move_all
from apps.usage.models import KeyUsageHour, UsageMove
from apps.usage.moving import BATCH_PREFIX, usage_move, usage_move_all
from tests.conftest import _free_port
from tests.factories import make_key

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


def totals(key_id: int) -> dict[tuple[str, str], int]:
    rows = KeyUsageHour.objects.filter(key_id=key_id).values("operation", "outcome")
    found = {(r["operation"], r["outcome"]): r["total"] for r in rows.annotate(total=Sum("count"))}
    return {group: total for group, total in found.items() if total}


def redis_client():
    from django.core.cache import cache

    return cache._cache.get_client(write=True)


def mcp_call(url: str, secret: str) -> int:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    call["params"] = {"name": "get_workspace", "arguments": {}}
    headers = {
        "Authorization": f"Bearer {secret}",
        "Accept": "application/json, text/event-stream",
    }
    return httpx.post(f"{url}/mcp", json=call, headers=headers, timeout=10).status_code


def test_with_redis_each_request_is_counted_in_redis_before_its_answer_and_moved_exactly(
    live_server, settings, with_redis
):
    settings.USAGE_FLUSH_SECONDS = 3600  # nothing moves unless the test says so
    key = make_key(scopes=["pages:read"])
    revoked = make_key()
    revoked.key.revoked_at = revoked.key.created_at
    revoked.key.save(update_fields=["revoked_at"])  # as revoking leaves it
    headers = {"Authorization": f"Bearer {key.secret}"}
    codes = [
        httpx.get(f"{live_server.url}/api/v1/{path}", headers=headers, timeout=10).status_code
        for path in ["workspace"] * 5 + ["products"] * 3 + ["pages"] * 2
    ]
    assert codes == [200] * 5 + [403] * 3 + [200] * 2
    assert [mcp_call(live_server.url, key.secret) for _ in range(4)] == [200] * 4
    gone = {"Authorization": f"Bearer {revoked.secret}"}
    assert httpx.get(f"{live_server.url}/api/v1/workspace", headers=gone).status_code == 401

    # Every request is in Redis already, as it began; nothing in PostgreSQL yet.
    waiting = {
        field.decode(): int(amount)
        for field, amount in redis_client().hgetall(REDIS_COUNTS).items()
    }
    assert sum(waiting.values()) == 15
    assert not KeyUsageHour.objects.exists()

    usage_flush()  # sends this process's corrections, then moves
    assert totals(key.key.pk) == {
        ("get_workspace", "2xx"): 5,
        ("list_products", "403"): 3,
        ("list_pages", "2xx"): 2,
        ("mcp:get_workspace", "2xx"): 4,
    }
    assert totals(revoked.key.pk) == {("get_workspace", "401"): 1}
    assert not redis_client().exists(REDIS_COUNTS)
    assert UsageMove.objects.count() == 1
    usage_flush()
    assert usage_move() == 0  # nothing moved twice
    assert sum(totals(key.key.pk).values()) == 14


def test_a_batch_a_mover_died_with_is_moved_once_by_the_minute_job(settings, with_redis):
    key = make_key()
    hour = int(time.time()) // 3600 * 3600
    field = f"{key.key.pk}|{hour}|2xx|get_workspace"
    client = redis_client()
    # Two minutes ago a mover renamed this batch and died before writing it; another wrote its
    # batch and died before deleting it. A third is moving its batch right now.
    before = int(time.time()) - 120
    client.hset(f"{BATCH_PREFIX}{before}:lost", field, 7)
    client.hset(f"{BATCH_PREFIX}{before}:written", field, 5)
    UsageMove.objects.create(batch=f"{before}:written")
    fresh = f"{int(time.time())}:in-flight"
    client.hset(f"{BATCH_PREFIX}{fresh}", field, 100)
    client.hset(REDIS_COUNTS, field, 1)

    assert usage_move_all() == 8
    assert totals(key.key.pk) == {("get_workspace", "2xx"): 8}
    assert not client.exists(f"{BATCH_PREFIX}{before}:lost")
    assert not client.exists(f"{BATCH_PREFIX}{before}:written")
    assert client.exists(f"{BATCH_PREFIX}{fresh}")  # a live mover's batch is left to it


def _serve(env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    for _ in range(200):
        try:
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
            return process
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"the server did not start: {log.read_text()}")


def _kill_after_requests(env: dict[str, str], secret: str, tmp_path: Path) -> list[httpx.Response]:
    """Serve in a process of its own, send 60 requests (a third refused), SIGKILL it."""
    port = _free_port()
    server = _serve(env, port, tmp_path / "server.log")
    try:
        url = f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Bearer {secret}"}
        answers = [
            httpx.get(f"{url}/api/v1/{path}", headers=headers, timeout=10)
            for path in ["workspace", "workspace", "products"] * 20
        ]
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait(10)
    return answers


def _server_env(**extra: str) -> dict[str, str]:
    database = django_settings.DATABASES["default"]
    return {
        **os.environ,
        "DATABASE_URL": f"postgres://{database['USER']}@{database['HOST'] or '127.0.0.1'}:"
        f"{database['PORT'] or 5432}/{database['NAME']}",
        "USAGE_FLUSH_SECONDS": "3600",  # the buffer would hold an hour: only Redis saves them
        "EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend",
        **extra,
    }


@pytest.mark.postgres
def test_an_app_process_killed_with_sigkill_loses_no_count_with_redis(
    with_redis, redis_server, tmp_path
):
    key = make_key(scopes=["pages:read"])
    url, _start, _stop = redis_server
    answers = _kill_after_requests(_server_env(REDIS_URL=url), key.secret, tmp_path)
    codes = [answer.status_code for answer in answers]
    assert codes.count(200) == 40 and codes.count(403) == 20

    usage_move_all()  # the minute jobs, on a task worker
    request_log_move_all()
    logged = dict(
        RequestLogEntry.objects.filter(key_id=key.key.pk).values_list("request_id", "status")
    )
    assert len(logged) == 60  # the request log lost no row either
    answered = {answer.headers["Request-Id"]: answer.status_code for answer in answers}
    assert set(logged) == set(answered)
    # Every answer but perhaps the last has its status; the last may keep the one it began with.
    assert sum(logged[i] != answered[i] for i in answered) <= 1
    counted = totals(key.key.pk)
    assert sum(counted.values()) == 60  # not one lost
    # The last answer's correction may have died with the process: it stays counted as it
    # began (a success), never dropped.
    assert counted[("get_workspace", "2xx")] == 40
    assert counted.get(("list_products", "403"), 0) >= 19


@pytest.mark.postgres
def test_without_redis_a_killed_app_process_loses_what_its_buffer_held(tmp_path):
    key = make_key(scopes=["pages:read"])
    env = _server_env()
    env.pop("REDIS_URL", None)
    answers = _kill_after_requests(env, key.secret, tmp_path)
    assert len(answers) == 60
    assert totals(key.key.pk) == {}  # documented in docs/operations.md: configure Redis
    assert not RequestLogEntry.objects.filter(key_id=key.key.pk).exists()
