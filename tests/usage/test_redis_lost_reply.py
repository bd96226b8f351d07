"""A request whose limiter call Redis ran (and wrote to its append-only file) just before it was
SIGKILLed, so that the reply never reached the app, is counted and logged exactly once, as is
one whose call never reached Redis; and settling it again after a second lost reply changes
nothing (docs/operations.md, "A Redis crash or restart"; the fault run's row 8). The fault is
injected at the socket: a proxy between the app and a Redis of the test's own."""

import time
from collections.abc import Iterator

import httpx
import pytest
import time_machine

from apps.metering.buffer import usage_flush
from apps.metering.limits import rate_limit_reset
from apps.metering.pending import NOTED_SECONDS
from apps.request_log.models import RequestLogEntry
from tests.conftest import _app_on_redis
from tests.factories import make_key

from .redis_proxy import RedisFaultProxy
from .test_redis_counts import redis_client, totals

pytestmark = pytest.mark.django_db(transaction=True)


def noted_key(request_id: str) -> str:
    return f"gatehouse:noted:{request_id}"  # apps.metering.pending.noted_key


def _limiter_call(data: bytes) -> bool:
    return b"EVAL" in data and b"gatehouse:ratelimit:key:" in data


def _settling_call(data: bytes) -> bool:
    return b"EVAL" in data and b"gatehouse:noted:" in data and b"gatehouse:ratelimit:" not in data


@pytest.fixture
def proxied_redis(persistent_redis, settings) -> Iterator[tuple[RedisFaultProxy, object]]:
    url, crash_and_restart = persistent_redis
    proxy = RedisFaultProxy(int(url.rsplit(":", 1)[1].split("/")[0]))
    settings.USAGE_FLUSH_SECONDS = 3600  # what the requests leave waits until the test flushes
    with _app_on_redis(proxy.url):
        yield proxy, crash_and_restart
    proxy.close()


def _get(url: str, secret: str) -> str:
    answer = httpx.get(
        f"{url}/api/v1/workspace", headers={"Authorization": f"Bearer {secret}"}, timeout=10
    )
    assert answer.status_code == 200
    return answer.headers["Request-Id"]


def _flush_after_the_crash() -> None:
    rate_limit_reset()  # the process would try Redis again within seconds anyway
    usage_flush()


@pytest.mark.parametrize("lost", ["reply", "request"])
def test_a_request_whose_limiter_call_was_cut_by_a_redis_crash_is_recorded_once(
    live_server, proxied_redis, lost
):
    proxy, crash_and_restart = proxied_redis
    key = make_key()
    ids = [_get(live_server.url, key.secret) for _ in range(5)]
    # Redis is SIGKILLed after running the call and before its reply reaches the app (`reply`),
    # or before the call reaches it (`request`); then it starts again from its file.
    proxy.arm(lost, _limiter_call, crash_and_restart)
    ids.append(_get(live_server.url, key.secret))
    ids += [_get(live_server.url, key.secret) for _ in range(3)]  # served per process
    proxy.wait_handled(1)  # Redis has started again from its file
    assert proxy.faults == 1
    ran = redis_client().get(noted_key(ids[5]))

    _flush_after_the_crash()

    assert totals(key.key.pk) == {("get_workspace", "2xx"): 9}
    logged = list(RequestLogEntry.objects.values_list("request_id", "status", "duration_ms"))
    assert sorted(request_id for request_id, _, _ in logged) == sorted(ids)
    assert all(status == 200 and duration is not None for _, status, duration in logged)
    assert ran == (b"a" if lost == "reply" else None)  # the fault was the one meant
    assert redis_client().get(noted_key(ids[5])) == b"s"


def test_settling_again_after_its_own_reply_was_lost_changes_nothing(live_server, proxied_redis):
    proxy, crash_and_restart = proxied_redis
    key = make_key()
    proxy.arm("reply", _limiter_call, crash_and_restart)
    lost = _get(live_server.url, key.secret)
    # Only once Redis runs again (the app answered when its call timed out, maybe before):
    # otherwise the settling call finds nothing to reach, and no fault is injected.
    proxy.wait_handled(1)
    # The settling call runs, and Redis dies again before its reply comes back.
    proxy.arm("reply", _settling_call, crash_and_restart)
    _flush_after_the_crash()
    proxy.wait_handled(2)
    assert proxy.faults == 2
    assert redis_client().get(noted_key(lost)) == b"s"

    _flush_after_the_crash()  # settled again: its mark says it was

    assert totals(key.key.pk) == {("get_workspace", "2xx"): 1}
    assert list(RequestLogEntry.objects.values_list("request_id", flat=True)) == [lost]


def test_a_request_unsettled_past_its_marks_life_is_recorded_once_without_redis(
    live_server, proxied_redis
):
    """Redis away for longer than a mark lives: the request is counted and logged once through
    the process's own fallback to PostgreSQL, never lost."""
    proxy, _crash_and_restart = proxied_redis
    key = make_key()

    def redis_gone() -> None:
        proxy.down = True

    proxy.arm("request", _limiter_call, redis_gone)
    lost = _get(live_server.url, key.secret)
    proxy.wait_handled(1)
    _flush_after_the_crash()  # Redis cannot say yet: the request waits for it
    assert totals(key.key.pk) == {}
    assert not RequestLogEntry.objects.exists()

    with time_machine.travel(time.time() + NOTED_SECONDS + 1, tick=False):
        usage_flush()

    assert totals(key.key.pk) == {("get_workspace", "2xx"): 1}
    assert list(RequestLogEntry.objects.values_list("request_id", "status")) == [(lost, 200)]
