"""`gatehouse service-accounts ...` and `gatehouse keys create --service-account ID`, as a
subprocess against a live server."""

import json

import pytest

from apps.api.scopes import EVERY_SCOPE
from apps.api_keys.models import ApiKey
from apps.workspaces.models import ServiceAccount
from tests.factories import make_key, owner_of

from .test_cli import env, run  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def owner_env(env, live_server):  # noqa: F811
    owner = owner_of(email="owner@example.com")
    manager = make_key(user=owner, scopes=EVERY_SCOPE, name="Manager")
    env.update(GATEHOUSE_API_KEY=manager.secret, GATEHOUSE_URL=live_server.url)
    return env


def test_create_list_make_a_key_and_delete(owner_env):
    made = run(owner_env, "--json", "service-accounts", "create", "--name", "CI deploy")
    assert made.returncode == 0, made.stderr
    account = json.loads(made.stdout)
    assert account["userEmail"].endswith(".invalid")

    listed = run(owner_env, "service-accounts", "list")
    assert listed.returncode == 0 and "CI deploy" in listed.stdout

    key = run(
        owner_env,
        "--json",
        "keys",
        "create",
        "--service-account",
        str(account["id"]),
        "--name",
        "Deploys",
        "--scopes",
        "pages:read",
    )
    assert key.returncode == 0, key.stderr
    record = json.loads(key.stdout)
    assert record["serviceAccount"] == {"id": account["id"], "name": "CI deploy"}
    assert record["secret"].startswith("gwk_")

    mine = run(owner_env, "--json", "keys", "create", "--name", "Mine", "--scopes", "pages:read")
    assert json.loads(mine.stdout)["serviceAccount"] is None

    gone = run(owner_env, "service-accounts", "delete", str(account["id"]))
    assert gone.returncode == 0, gone.stderr
    assert "its keys are revoked" in gone.stdout
    assert ApiKey.objects.get(pk=record["id"]).revoked_at is not None
    assert ServiceAccount.objects.get(pk=account["id"]).deleted_at is not None


def test_an_unknown_service_account_is_a_clear_error(owner_env):
    result = run(
        owner_env,
        "keys",
        "create",
        "--service-account",
        "999",
        "--name",
        "x",
        "--scopes",
        "pages:read",
    )
    assert result.returncode != 0
    assert "No service account with this id" in result.stderr
