"""The quota under concurrency, black-box: two gunicorns of two workers each on PostgreSQL and one
Redis, sixteen clients at once against a quota (docs/operations.md, "Quotas"); and the same
servers a day later (libfaketime moves their clock), where the allowance is whole again."""

import os
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest
import requests

from apps.common.quota_periods import Quota
from tests.factories import WorkspaceFactory, make_key, owner_of
from tests.jobs.test_workers import _database_env
from tests.operations.live import gunicorn

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
CLIENTS = 16
# Debian's `faketime` package (.ci/run installs it): a process's clock, moved.
FAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1")


def all_at_once(bases: list[str], secret: str, each: int) -> list[int]:
    """CLIENTS clients, each sending `each` GET /workspace in turn to the servers."""
    headers = {"Authorization": f"Bearer {secret}"}

    def client(number: int) -> list[int]:
        session = requests.Session()
        return [
            session.get(
                f"{bases[(number + n) % 2]}/api/v1/workspace", headers=headers, timeout=30
            ).status_code
            for n in range(each)
        ]

    with ThreadPoolExecutor(CLIENTS) as pool:
        return [status for result in pool.map(client, range(CLIENTS)) for status in result]


def test_sixteen_clients_on_two_servers_get_exactly_the_quota_and_refusals_spend_none(
    tmp_path, redis_server
):
    url, _, _ = redis_server
    owner = owner_of(WorkspaceFactory(name="Quota"))
    made = make_key(
        user=owner, scopes=["pages:read"], quota=Quota(40, "day"), expires_in=timedelta(days=30)
    )
    env = {**_database_env(), "LOG_LEVEL": "WARNING", "HOME": str(tmp_path), "REDIS_URL": url}
    env["DEBUG"] = "true"
    headers = {"Authorization": f"Bearer {made.secret}"}
    with (
        gunicorn(env, tmp_path / "one.log", workers=2) as (one, _),
        gunicorn(env, tmp_path / "two.log", workers=2) as (two, _),
    ):
        bases = [one, two]

        def client(number: int) -> list[int]:
            session = requests.Session()
            statuses = []
            for n in range(12):
                base = bases[(number + n) % 2]
                # One call in three is refused (403: no keys:read) and must not spend the quota.
                path = "/api/v1/keys" if n % 3 == 2 else "/api/v1/workspace"
                statuses.append(session.get(base + path, headers=headers, timeout=30).status_code)
            return statuses

        with ThreadPoolExecutor(CLIENTS) as pool:
            statuses = [s for result in pool.map(client, range(CLIENTS)) for s in result]
        quota_spent = requests.get(f"{one}/api/v1/workspace", headers=headers, timeout=30)
    assert statuses.count(200) == 40, sorted(set(statuses))
    assert set(statuses) <= {200, 403, 429}
    assert quota_spent.json()["error"] == "quota-exceeded"


def test_a_day_later_the_same_two_servers_give_exactly_the_daily_allowance_again(
    tmp_path, redis_server
):
    if not FAKETIME.exists():
        message = f"{FAKETIME} is missing: apt-get install faketime"
        if os.environ.get("GATEHOUSE_REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)
    url, _, _ = redis_server
    owner = owner_of(WorkspaceFactory(name="Refill"))
    made = make_key(
        user=owner, scopes=["pages:read"], quota=Quota(10, "day"), expires_in=timedelta(days=30)
    )
    env = {**_database_env(), "LOG_LEVEL": "WARNING", "HOME": str(tmp_path), "REDIS_URL": url}
    with (
        gunicorn(env, tmp_path / "one.log", workers=2) as (one, _),
        gunicorn(env, tmp_path / "two.log", workers=2) as (two, _),
    ):
        today = all_at_once([one, two], made.secret, 2)
    tomorrow_env = {
        **env,
        "LD_PRELOAD": str(FAKETIME),
        "FAKETIME": "+1d",  # the servers' clock a day on
        # Without it libfaketime 0.9.10 turns Python's time.sleep (an absolute clock_nanosleep
        # on the monotonic clock) into EINVAL.
        "FAKETIME_FORCE_MONOTONIC_FIX": "1",
    }
    with (
        gunicorn(tomorrow_env, tmp_path / "one-later.log", workers=2) as (one, _),
        gunicorn(tomorrow_env, tmp_path / "two-later.log", workers=2) as (two, _),
    ):
        tomorrow = all_at_once([one, two], made.secret, 2)
        spent = requests.get(
            f"{one}/api/v1/workspace", headers={"Authorization": f"Bearer {made.secret}"}
        )
    assert today.count(200) == 10 and today.count(429) == 22
    assert tomorrow.count(200) == 10 and tomorrow.count(429) == 22  # the whole 10 again
    assert 86_000 < int(spent.headers["Retry-After"]) <= 86_400  # until the day after


def test_three_keys_sharing_a_quota_on_two_servers_get_exactly_the_shared_allowance(
    tmp_path, redis_server
):
    from apps.audit.services import Actor
    from apps.service_accounts.services import (
        service_account_create,
        service_account_key_create,
        service_account_update,
    )

    url, _, _ = redis_server
    owner = owner_of(WorkspaceFactory(name="Shared"))
    workspace, actor = owner.memberships.get().workspace, Actor.of_user(owner)
    account = service_account_create(workspace=workspace, name="Sync", actor=actor)
    service_account_update(
        account=account, changes={"quotaShared": {"requests": 30, "period": "day"}}, actor=actor
    )
    secrets = [
        service_account_key_create(
            account=account, name=f"Sync {n}", scopes=["pages:read"], expires_at=None, actor=actor
        ).secret
        for n in range(3)
    ]
    env = {**_database_env(), "LOG_LEVEL": "WARNING", "HOME": str(tmp_path), "REDIS_URL": url}
    with (
        gunicorn(env, tmp_path / "one.log", workers=2) as (one, _),
        gunicorn(env, tmp_path / "two.log", workers=2) as (two, _),
    ):
        bases = [one, two]

        def client(number: int) -> list[int]:
            session = requests.Session()
            return [
                session.get(
                    f"{bases[(number + n) % 2]}/api/v1/workspace",
                    headers={"Authorization": f"Bearer {secrets[(number + n) % 3]}"},
                    timeout=30,
                ).status_code
                for n in range(4)
            ]

        with ThreadPoolExecutor(CLIENTS) as pool:
            statuses = [s for result in pool.map(client, range(CLIENTS)) for s in result]
    assert statuses.count(200) == 30 and statuses.count(429) == 34, sorted(statuses)
