"""The shared cache's Redis client (apps/common/cache.py)."""

from unittest import mock

import pytest
import redis

from apps.common.cache import redis_client
from apps.metering.redis_call import _GCRA_SCRIPT

pytestmark = pytest.mark.django_db


def test_one_redis_client_serves_every_request_of_a_process(client, with_redis):
    """Django's cache made a redis.Redis for every operation (0.3 ms a request on the hot
    path): one per pool is kept instead, and requests make none."""
    from tests.factories import make_key

    secret = make_key().secret
    assert redis_client() is redis_client()
    with mock.patch.object(redis.Redis, "__init__", side_effect=AssertionError("a new client")):
        for _ in range(3):
            answer = client.get("/api/v1/workspace", HTTP_AUTHORIZATION=f"Bearer {secret}")
            assert answer.status_code == 200
            assert answer.has_header("RateLimit")  # counted in Redis, not per process


def test_the_limiter_s_script_is_sent_once_then_named_by_its_digest(client, with_redis):
    """EVALSHA on the hot path; after Redis forgets its scripts (a restart, SCRIPT FLUSH), the
    next request sends it again and is answered as any other."""
    from tests.factories import make_key

    secret = make_key().secret

    def call() -> None:
        answer = client.get("/api/v1/workspace", HTTP_AUTHORIZATION=f"Bearer {secret}")
        assert answer.status_code == 200 and answer.has_header("RateLimit")

    call()
    sent = mock.patch.object(redis.Redis, "eval", autospec=True, side_effect=redis.Redis.eval)

    def limiter_scripts_sent() -> int:  # the usage flush's own scripts are sent too
        return sum(1 for c in eval_calls.call_args_list if c.args[1] == _GCRA_SCRIPT)

    with sent as eval_calls:
        call()
        assert limiter_scripts_sent() == 0  # by digest only
        redis_client().script_flush()
        call()  # refused by digest, then sent whole
        assert limiter_scripts_sent() == 1
