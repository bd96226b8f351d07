"""A key's quota counted in Redis, in the rate limiter's own script call (docs/product.md §17),
against a live server and a private Redis: exact, given back by refusals, rebuilt (never fresh)
after a crash, and counted in PostgreSQL while Redis is away."""

import time

import pytest

from apps.common.cache import redis_health
from apps.common.quota_periods import Quota
from apps.quotas.models import QuotaCounter
from apps.usage.models import KeyUsageHour
from tests.factories import make_key, owner_of
from tests.usage.test_redis_counts import redis_client

from .test_quota_api import call

pytestmark = pytest.mark.django_db(transaction=True)


def quota_counts() -> dict[str, int]:
    client = redis_client()
    return {name.decode(): int(client.get(name)) for name in client.keys("gatehouse:quota:k*")}


def test_with_redis_the_count_is_taken_in_redis_and_refusals_give_their_unit_back(
    live_server, with_redis
):
    owner = owner_of()
    made = make_key(user=owner, scopes=["pages:read"], quota=Quota(3, "day"))
    assert call(live_server, made.secret, "GET", "/keys").status_code == 403  # given back
    assert [call(live_server, made.secret).status_code for _ in range(4)] == [200, 200, 200, 429]
    assert list(quota_counts().values()) == [3]
    [name] = quota_counts()  # kept a day past its period (the rebuild set it; INCR keeps it)
    assert 86_400 < redis_client().ttl(name) <= 2 * 86_400
    refused = call(live_server, made.secret)
    assert refused.json()["error"] == "quota-exceeded" and "Retry-After" in refused.headers
    # The copy PostgreSQL keeps, what a rebuild after a crash starts from.
    assert QuotaCounter.objects.get(scope=f"k{made.key.pk}").used == 3


def test_a_redis_crash_never_hands_out_a_fresh_allowance(live_server, with_redis):
    start, stop = with_redis
    made = make_key(user=owner_of(), scopes=["pages:read"], quota=Quota(5, "month"))
    assert [call(live_server, made.secret).status_code for _ in range(2)] == [200, 200]
    stop()  # nothing on disk: every count in Redis is gone
    start()
    assert quota_counts() == {}
    statuses = [call(live_server, made.secret).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]  # what was left (3), not the allowance (5)


def test_the_copy_of_redis_counts_alone_rebuilds_what_was_used(live_server, with_redis):
    """As if the usage tables had not yet been given the last counts when Redis died."""
    start, stop = with_redis
    made = make_key(user=owner_of(), scopes=["pages:read"], quota=Quota(5, "day"))
    assert [call(live_server, made.secret).status_code for _ in range(3)] == [200] * 3
    KeyUsageHour.objects.all().delete()
    stop()
    start()
    statuses = [call(live_server, made.secret).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]


def test_while_redis_is_out_of_reach_postgresql_counts_and_redis_learns_it_after(
    live_server, with_redis
):
    made = make_key(user=owner_of(), scopes=["pages:read"], quota=Quota(6, "week"))
    assert [call(live_server, made.secret).status_code for _ in range(2)] == [200, 200]
    # PostgreSQL's copy of the count lags Redis's by up to a flush (5 s in production).
    QuotaCounter.objects.filter(scope=f"k{made.key.pk}").update(used=0)
    redis_client().client_pause(2500)  # out of reach (the app waits 0.25 s), its data kept
    assert [call(live_server, made.secret).status_code for _ in range(2)] == [200, 200]
    time.sleep(2.6)
    redis_health.reset()  # try Redis again at once, not after the usual 5 s
    assert list(quota_counts().values()) == [2]  # Redis missed the two served meanwhile
    statuses = [call(live_server, made.secret).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]  # 2 in Redis + 2 in PostgreSQL + 2 = 6


def test_an_outage_does_not_hand_out_again_what_the_lagging_copy_missed(live_server, with_redis):
    made = make_key(user=owner_of(), scopes=["pages:read"], quota=Quota(4, "day"))
    assert [call(live_server, made.secret).status_code for _ in range(2)] == [200, 200]
    QuotaCounter.objects.filter(scope=f"k{made.key.pk}").update(used=0)  # the copy lags
    redis_client().client_pause(2500)
    statuses = [call(live_server, made.secret).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]  # counted on from what this process last saw: 2
    time.sleep(2.6)
