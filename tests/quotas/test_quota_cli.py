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
