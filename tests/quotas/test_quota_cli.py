"""`gatehouse keys create --quota 10000/month`, `keys show` and `keys quota` as a subprocess
against a live server."""

import json

import pytest

from apps.api.scopes import EVERY_SCOPE
from apps.api_keys.models import ApiKey
from tests.cli.test_cli import env, run  # noqa: F401 - the fixture
from tests.factories import make_key, owner_of

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def manager_env(env, live_server):  # noqa: F811
    owner = owner_of(email="owner@example.com")
    manager = make_key(user=owner, scopes=EVERY_SCOPE, name="Manager")
    env.update(GATEHOUSE_API_KEY=manager.secret, GATEHOUSE_URL=live_server.url)
    return env


def test_keys_create_takes_a_quota_as_people_write_it_and_show_and_quota_report_it(manager_env):
    made = run(
        manager_env,
        *("--json", "keys", "create", "--name", "Shop", "--scopes", "pages:read"),
        *("--quota", "10,000/month"),
    )
    assert made.returncode == 0, made.stderr
    key_id = json.loads(made.stdout)["id"]
    assert ApiKey.objects.get(pk=key_id).quota_requests == 10_000
    shown = run(manager_env, "keys", "show", str(key_id))
    assert shown.returncode == 0, shown.stderr
    assert "0 of 10,000 used this month, 10,000 left; refills " in shown.stdout
    topped = run(manager_env, "--json", "keys", "quota", str(key_id), "--add", "5")
    assert topped.returncode == 0, topped.stderr
    assert json.loads(topped.stdout)["left"] == 10_005


def test_a_quota_the_cli_cannot_read_is_a_usage_error_naming_the_form(manager_env):
    bad = run(
        manager_env,
        *("keys", "create", "--name", "Shop", "--scopes", "pages:read", "--quota", "lots"),
    )
    assert bad.returncode == 2
    assert "10000/month" in bad.stderr


def test_service_accounts_update_shares_a_quota_and_none_ends_it(manager_env):
    made = run(manager_env, "--json", "service-accounts", "create", "--name", "CI deploy")
    assert made.returncode == 0, made.stderr
    account_id = str(json.loads(made.stdout)["id"])
    shared = run(
        manager_env,
        *("--json", "service-accounts", "update", account_id, "--quota-shared", "2,000/week"),
    )
    assert shared.returncode == 0, shared.stderr
    assert json.loads(shared.stdout)["quotaShared"] == {"requests": 2000, "period": "week"}
    key = run(
        manager_env,
        *("--json", "keys", "create", "--service-account", account_id, "--name", "Deploys"),
        *("--scopes", "pages:read"),
    )
    assert key.returncode == 0, key.stderr
    assert json.loads(key.stdout)["quotaShared"] is True
    shown = run(manager_env, "keys", "show", str(json.loads(key.stdout)["id"]))
    assert "0 of 2,000 used this week, 2,000 left" in shown.stdout, shown.stdout
    ended = run(
        manager_env,
        *("--json", "service-accounts", "update", account_id, "--quota-shared", "none"),
    )
    assert ended.returncode == 0, ended.stderr
    assert json.loads(ended.stdout)["quotaShared"] is None
