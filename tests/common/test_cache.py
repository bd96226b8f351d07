"""The shared cache's Redis client (apps/common/cache.py)."""

from unittest import mock

import pytest
import redis

from apps.common.cache import redis_client

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
