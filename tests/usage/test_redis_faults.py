"""What a Redis crash may cost (docs/operations.md): with its append-only file on, as the
production setting says, nothing that waits in it; without, what waited. And a batch whose
mover died is taken back by the next flush of any app process within seconds, across a Redis
restart too."""

import io
import time

import httpx
import pytest
import time_machine
from django.core.management import CommandError, call_command
from django.test import override_settings

from apps.metering.batches import batch_take, index_of
from apps.metering.buffer import usage_flush
from apps.metering.limits import rate_limit_reset
from apps.metering.records import REDIS_COUNTS, REDIS_REQUESTS
from apps.request_log.models import RequestLogEntry
from apps.request_log.moving import BATCH_PREFIX as LOG_BATCHES
from apps.usage.moving import BATCH_PREFIX as COUNT_BATCHES
from tests.factories import make_key

from .test_redis_counts import redis_client, totals

pytestmark = pytest.mark.django_db(transaction=True)


def _serve_requests(url: str, secret: str, count: int) -> list[str]:
    headers = {"Authorization": f"Bearer {secret}"}
    answers = [
        httpx.get(f"{url}/api/v1/workspace", headers=headers, timeout=10) for _ in range(count)
    ]
    assert [answer.status_code for answer in answers] == [200] * count
    return [answer.headers["Request-Id"] for answer in answers]


def test_a_redis_crash_with_its_append_only_file_loses_no_count_and_no_log_entry(
    live_server, settings, with_persistent_redis
):
    settings.USAGE_FLUSH_SECONDS = 3600  # what the requests leave waits in Redis
    key = make_key()
    ids = _serve_requests(live_server.url, key.secret, 30)
    assert redis_client().llen(REDIS_REQUESTS) >= 30  # begun, and completions riding on

    with_persistent_redis()  # SIGKILL, then the same Redis starts again from its file
    rate_limit_reset()  # this process would try Redis again within seconds anyway
    usage_flush()

    assert totals(key.key.pk) == {("get_workspace", "2xx"): 30}
    logged = dict(RequestLogEntry.objects.values_list("request_id", "status"))
    assert logged == dict.fromkeys(ids, 200)


def test_without_persistence_a_redis_crash_loses_what_waited_in_it(
    live_server, settings, with_redis
):
    """The cost docs/operations.md states for a Redis without its append-only file."""
    settings.USAGE_FLUSH_SECONDS = 3600
    key = make_key()
    _serve_requests(live_server.url, key.secret, 10)
    start, stop = with_redis
    stop()
    start()
    rate_limit_reset()
    usage_flush()
    assert totals(key.key.pk) == {}
    assert not RequestLogEntry.objects.exists()


def test_a_batch_whose_mover_died_is_taken_back_by_the_next_flush_across_a_redis_restart(
    live_server, settings, with_persistent_redis
):
    settings.USAGE_FLUSH_SECONDS = 3600
    key = make_key()
    ids = _serve_requests(live_server.url, key.secret, 20)
    # A mover takes both batches and is killed before it writes them.
    counts, log = batch_take(REDIS_COUNTS, COUNT_BATCHES), batch_take(REDIS_REQUESTS, LOG_BATCHES)
    assert counts and log
    with_persistent_redis()  # and Redis restarts inside the lease
    rate_limit_reset()
    client = redis_client()
    assert client.zscore(index_of(COUNT_BATCHES), counts) is not None  # kept on disk

    usage_flush()  # within the lease: the batches are the dead mover's still
    assert totals(key.key.pk) == {}
    with time_machine.travel(time.time() + 6, tick=False):
        usage_flush()  # any process's next flush, six seconds later
    assert totals(key.key.pk) == {("get_workspace", "2xx"): 20}
    assert set(RequestLogEntry.objects.values_list("request_id", flat=True)) == set(ids)
    assert not client.exists(COUNT_BATCHES + counts) and not client.exists(LOG_BATCHES + log)
    assert client.zcard(index_of(COUNT_BATCHES)) == client.zcard(index_of(LOG_BATCHES)) == 0
    usage_flush()
    assert sum(totals(key.key.pk).values()) == 20  # moved once


def test_an_operator_moves_everything_waiting_by_hand(live_server, settings, with_redis):
    settings.USAGE_FLUSH_SECONDS = 3600
    key = make_key()
    _serve_requests(live_server.url, key.secret, 12)
    batch_take(REDIS_REQUESTS, LOG_BATCHES)  # a mover stopped a moment ago, inside its lease
    out = io.StringIO()
    call_command("movebatches", stdout=out)
    assert "Moved 12 usage counts." in out.getvalue()
    assert "Moved 12 request log entries." in out.getvalue()
    assert totals(key.key.pk) == {("get_workspace", "2xx"): 12}
    assert RequestLogEntry.objects.count() == 12


def test_moving_by_hand_without_redis_says_there_is_nothing_to_move(settings):
    settings.REDIS_URL = ""
    with pytest.raises(CommandError, match="REDIS_URL is not set"):
        call_command("movebatches")


def test_the_deploy_check_warns_of_a_redis_that_keeps_no_file(with_redis, persistent_redis):
    from apps.metering.checks import check_redis_persistence

    assert [w.id for w in check_redis_persistence(None)] == ["gatehouse.W002"]
    url, _restart = persistent_redis
    with override_settings(REDIS_URL=url, CACHES=_cache_at(url)):
        assert check_redis_persistence(None) == []


def _cache_at(url: str) -> dict:
    return {
        "default": {
            "BACKEND": "apps.common.cache.FailOpenRedisCache",
            "LOCATION": url,
            "OPTIONS": {"socket_connect_timeout": 0.25, "socket_timeout": 0.25},
        }
    }
