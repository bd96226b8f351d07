"""A service account is named by its name wherever a holder is shown, never by its .invalid
address (PRODUCT §12): the key list and its bulk revoke, an opened Logs row, the Usage CSV, the
key inventory's CSV, the service account's own page, and `gatehouse keys list|show`."""

import json

import pytest

from apps.api.scopes import EVERY_SCOPE
from apps.audit.services import Actor
from apps.service_accounts.services import service_account_create, service_account_key_create
from tests.cli.test_cli import env, run  # noqa: F401 - the fixture
from tests.conftest import auth
from tests.factories import make_key, owner_of

INVALID = ".invalid"


def service_account_with_key(workspace, owner):
    """The service account "CI deploy" of `workspace`, made by `owner`, and a key of it."""
    by_owner = Actor.of_user(owner)
    account = service_account_create(workspace=workspace, name="CI deploy", actor=by_owner)
    made = service_account_key_create(
        account=account, name="Deploys", scopes=["pages:read"], expires_at=None,
        actor=by_owner,
    )  # fmt: skip
    assert made.key.user.email.endswith(INVALID)
    return account, made


@pytest.fixture
def account_key(workspace, owner):
    return service_account_with_key(workspace, owner)


def text_of(response) -> str:
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


@pytest.mark.django_db
def test_the_dashboard_and_its_csvs_name_the_service_account(client, owner, account_key):
    account, made = account_key
    answer = client.get("/api/v1/pages", **auth(made.secret))
    assert answer.status_code == 200
    request_id = answer["Request-Id"]
    shown = {
        "key list": client.get("/integrations/api/"),
        "key page": client.get(f"/integrations/api/keys/{made.key.pk}/"),
        "bulk revoke": client.post("/integrations/api/revoke-selected/", {"keys": [made.key.pk]}),
        "logs row": client.get(f"/logs/?q={request_id}"),
        "usage csv": client.get("/usage/export.csv"),
        "inventory csv": client.get("/integrations/api/export.csv"),
        "service account": client.get(f"/settings/team/service-accounts/{account.pk}/"),
    }
    for where, response in shown.items():
        assert response.status_code == 200, where
        text = text_of(response)
        assert "CI deploy" in text, where
        assert INVALID not in text, where


@pytest.mark.django_db(transaction=True)
def test_the_cli_names_the_service_account_in_keys_list_and_show(env, live_server):  # noqa: F811
    owner = owner_of(email="owner@example.com")
    workspace = owner.memberships.get().workspace
    manager = make_key(user=owner, scopes=EVERY_SCOPE, name="Manager")
    _account, made = service_account_with_key(workspace, owner)
    env.update(GATEHOUSE_API_KEY=manager.secret, GATEHOUSE_URL=live_server.url)
    listed = run(env, "keys", "list")
    assert listed.returncode == 0, listed.stderr
    assert "HOLDER" in listed.stdout and "CI deploy" in listed.stdout
    assert "owner@example.com" in listed.stdout  # a person is named by their address
    assert INVALID not in listed.stdout
    shown = run(env, "keys", "show", str(made.key.pk))
    assert shown.returncode == 0, shown.stderr
    assert "CI deploy (service account)" in shown.stdout and INVALID not in shown.stdout
    as_json = json.loads(run(env, "--json", "keys", "show", str(made.key.pk)).stdout)
    assert as_json["holderEmail"].endswith(INVALID)  # the API's record is unchanged for programs
