"""The quota under concurrency, black-box: two gunicorns of two workers each on PostgreSQL and one
Redis, sixteen clients at once against a 40-request quota (docs/operations.md, "Quotas")."""

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import requests

from apps.common.quota_periods import Quota
from tests.factories import WorkspaceFactory, make_key, owner_of
from tests.jobs.test_workers import _database_env
from tests.operations.live import gunicorn

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
CLIENTS = 16


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
