"""Rate limits: the per-key bucket, its RateLimit fields, failed authentication per address,
and Redis: shared between app servers, and failing open when it is down."""

from datetime import datetime, timedelta

import pytest
import time_machine

from apps.api_keys.auth import blocked_addresses
from apps.metering import limits as ratelimit
from tests.conftest import auth
from tests.factories import make_key

pytestmark = pytest.mark.django_db
URL = "/api/v1/workspace"
T0 = datetime.fromisoformat("2026-11-22T10:00:15+00:00")


def at(moment: datetime):
    return time_machine.travel(moment, tick=False)


def test_a_key_gets_its_limit_then_429_with_retry_after_and_ratelimit_fields(client, key, settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 3  # one request every 20 s once the burst is spent
    other = make_key()
    with at(T0):
        answers = [client.get(URL, **auth(key.secret)) for _ in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 200]
        assert [a["RateLimit"] for a in answers] == [
            '"default";r=2;t=20',
            '"default";r=1;t=40',
            '"default";r=0;t=60',
        ]
        assert answers[0]["RateLimit-Policy"] == '"default";q=3;w=60'
        refused = client.get(URL, **auth(key.secret))
        assert refused.status_code == 429
        assert refused.json()["error"] == "rate-limited"
        assert refused["Retry-After"] == "20"
        assert refused["RateLimit"] == '"default";r=0;t=20'
        assert client.get(URL, **auth(other.secret)).status_code == 200
    with at(T0 + timedelta(seconds=19)):
        assert client.get(URL, **auth(key.secret)).status_code == 429
    with at(T0 + timedelta(seconds=20)):
        assert client.get(URL, **auth(key.secret)).status_code == 200


def test_every_authenticated_answer_carries_the_fields_errors_included(client, settings):
    reader = make_key(scopes=["pages:read"])
    forbidden = client.get("/api/v1/products", **auth(reader.secret))
    assert forbidden.status_code == 403
    assert forbidden["RateLimit"].startswith('"default";r=')
    invalid = client.post(
        "/api/v1/pages", "[]", content_type="application/json", **auth(reader.secret)
    )
    assert invalid.status_code == 403 and "RateLimit-Policy" in invalid
    assert "RateLimit" not in client.get(URL)  # no key, nothing counted


def test_no_burst_of_twice_the_limit_around_a_minute_boundary(client, key, settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 60
    end_of_minute = datetime.fromisoformat("2026-11-22T10:00:59.500+00:00")
    with at(end_of_minute):
        codes = [client.get(URL, **auth(key.secret)).status_code for _ in range(61)]
        assert codes.count(200) == 60 and codes[-1] == 429
    with at(end_of_minute + timedelta(seconds=1)):  # a new minute on the clock
        codes = [client.get(URL, **auth(key.secret)).status_code for _ in range(5)]
        assert codes == [200, 429, 429, 429, 429]


def test_failed_authentication_is_limited_per_client_address(client, settings):
    settings.API_AUTH_FAILURES_PER_MINUTE = 5
    good = make_key()
    bad = make_key()
    bad_secret = bad.secret
    from apps.api_keys.services import api_key_revoke
    from apps.audit.services import Actor

    api_key_revoke(key=bad.key, actor=Actor.of_operator("test"))
    attacker = {"REMOTE_ADDR": "198.51.100.66"}
    with at(T0):
        codes = [
            client.get(
                URL, **auth(bad_secret if i % 2 else "gwk_" + "x" * 38), **attacker
            ).status_code
            for i in range(6)
        ]
        assert codes == [401, 401, 401, 401, 401, 429]
        blocked = client.get(URL, **auth(bad_secret), **attacker)
        assert blocked.status_code == 429
        assert "failed authentications" in blocked.json()["message"]
        assert int(blocked["Retry-After"]) >= 1
        # A valid key from the same address (an office behind one NAT) is never refused.
        assert client.get(URL, **auth(good.secret), **attacker).status_code == 200
        assert client.get(URL, **auth(good.secret), REMOTE_ADDR="203.0.113.5").status_code == 200
    with at(T0 + timedelta(minutes=1)):
        assert client.get(URL, **auth(bad_secret), **attacker).status_code == 401


def test_the_limit_is_shared_through_redis_across_app_servers(client, key, settings, with_redis):
    settings.API_RATE_LIMIT_PER_MINUTE = 2
    with at(T0):
        assert client.get(URL, **auth(key.secret)).status_code == 200
        ratelimit.rate_limit_reset()  # another app server: nothing counted in its memory
        assert client.get(URL, **auth(key.secret)).status_code == 200
        ratelimit.rate_limit_reset()
        assert client.get(URL, **auth(key.secret)).status_code == 429


def test_with_redis_down_the_api_serves_and_healthz_says_degraded(
    client, key, settings, with_redis, caplog
):
    start, stop = with_redis
    queue = {"state": "ok", "oldest_waiting_seconds": 0.0, "workers": 0, "schedule_late": False}
    assert client.get("/healthz").json() == {
        "status": "ok",
        "database": "ok",
        "redis": "ok",
        "queue": queue,
        "static": "ok",
    }
    stop()
    caplog.set_level("WARNING")
    answers = [client.get(URL, **auth(key.secret)) for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert answers[-1]["RateLimit"].startswith('"default";r=')
    warnings = [r for r in caplog.records if "Redis is unreachable" in r.getMessage()]
    assert len(warnings) == 1  # at most once a minute, not once per request
    health = client.get("/healthz")
    assert health.status_code == 200
    assert health.json()["status"] == "degraded"
    assert health.json()["redis"].startswith("unreachable")
    start()
    assert client.get("/healthz").json()["status"] == "ok"
    with at(datetime.now().astimezone() + timedelta(seconds=ratelimit.REDIS_RETRY_SECONDS)):
        assert client.get(URL, **auth(key.secret)).status_code == 200
        assert ratelimit.redis_health.failed_at is None  # counting in Redis again


def test_with_redis_down_sign_in_password_reset_and_device_still_work(
    client, settings, with_redis, caplog
):
    """Every page degrades the way the API does: limits per process, a warning a minute."""
    from django.core import mail

    from tests.factories import PASSWORD, owner_of

    start, stop = with_redis
    owner = owner_of(email="owner@example.com")
    stop()
    caplog.set_level("WARNING")
    assert client.get("/sign-in/").status_code == 200
    wrong = client.post("/sign-in/", {"login": owner.email, "password": "wrong-password"})
    assert wrong.status_code == 200 and "password" in wrong.content.decode().lower()
    right = client.post("/sign-in/", {"login": owner.email, "password": PASSWORD})
    assert right.status_code == 302
    code = client.post(
        "/oauth/device/code",
        {"client_id": "gatehouse-cli", "scope": "pages:read", "installation_id": "i"},
    ).json()["user_code"]
    assert client.get(f"/device?user_code={code}").status_code == 200
    client.post("/sign-out/")
    reset = client.post("/account/password/reset/", {"email": owner.email})
    assert reset.status_code == 302 and len(mail.outbox) == 1
    warnings = [r for r in caplog.records if "Redis is unreachable" in r.getMessage()]
    assert len(warnings) == 1
    # Failed sign-ins are still counted, in this process, while Redis is away.
    for _ in range(6):
        client.post("/sign-in/", {"login": owner.email, "password": "wrong-password"})
    refused = client.post("/sign-in/", {"login": owner.email, "password": "wrong-password"})
    assert "Too many" in refused.content.decode()
    start()


def test_health_is_unavailable_without_the_database(client, monkeypatch):
    def broken_cursor(*args, **kwargs):
        raise RuntimeError("database down")

    monkeypatch.setattr("apps.operations.probes.connection.cursor", broken_cursor)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["database"] == "down"


def test_a_clock_set_back_does_not_lock_a_key_out(client, key, settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 60
    with at(T0 + timedelta(days=1)):
        assert client.get(URL, **auth(key.secret)).status_code == 200
    with at(T0):
        assert client.get(URL, **auth(key.secret)).status_code == 200


def test_a_clock_set_back_does_not_lock_a_key_out_in_redis(client, key, settings, with_redis):
    settings.API_RATE_LIMIT_PER_MINUTE = 60
    with at(T0 + timedelta(days=1)):
        assert client.get(URL, **auth(key.secret)).status_code == 200
    with at(T0):
        assert client.get(URL, **auth(key.secret)).status_code == 200
        assert ratelimit.redis_health.failed_at is None


def test_a_blocked_addresses_bad_credentials_are_refused_by_every_app_server_through_redis(
    client, settings, with_redis
):
    settings.API_AUTH_FAILURES_PER_MINUTE = 3
    good = make_key()
    attacker = {"REMOTE_ADDR": "198.51.100.77"}
    with at(T0):
        codes = [
            client.get(URL, **auth("gwk_" + "x" * 38), **attacker).status_code for _ in range(4)
        ]
        assert codes == [401, 401, 401, 429]
        # Another app server: nothing in its memory, neither counts nor the block.
        ratelimit.rate_limit_reset()
        blocked_addresses.clear()
        refused = client.get(URL, **auth("gwk_" + "y" * 38), **attacker)
        assert refused.status_code == 429
        # A valid key from the blocked address is served, on any server.
        assert client.get(URL, **auth(good.secret), **attacker).status_code == 200
        assert "failed authentications" in refused.json()["message"]
        # Redis keeps the block for as long as the failures bucket refuses (its TTL runs on
        # Redis's own clock, so the test reads it rather than travelling past it).
        assert 1 <= int(refused["Retry-After"]) <= 60
        assert client.get(URL, **auth(good.secret), REMOTE_ADDR="203.0.113.5").status_code == 200


def test_refusals_are_logged_once_a_minute_per_address_and_reason(client, caplog, monkeypatch):
    from apps.api.refusal_log import refusal_lines

    now = [1000.0]
    monkeypatch.setattr(refusal_lines, "clock", lambda: now[0])
    caplog.set_level("WARNING", logger="apps.api")
    nat = {"REMOTE_ADDR": "198.51.100.9"}
    for _ in range(30):
        client.get(URL, **auth("gwk_" + "x" * 38), **nat)
    client.get(URL, **auth("gwk_" + "x" * 38), REMOTE_ADDR="203.0.113.9")
    lines = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(lines) == 2  # one for the NAT's 30, one for the other address
    now[0] += 61
    client.get(URL, **auth("gwk_" + "x" * 38), **nat)
    last = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()][-1]
    assert "same_refusals_not_logged=29" in last and "ip=198.51.100.9" in last
