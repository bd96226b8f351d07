"""Service accounts through the API (docs/product.md §12): owners make them and their keys, the
keys act as the account (an admin), and deleting one kills its keys at once."""

import json

import pytest
from django.core import mail

from apps.api_keys.models import ApiKey
from apps.audit.models import AuditEvent
from apps.workspaces.models import Membership
from tests.conftest import auth, run_tasks
from tests.factories import make_key

pytestmark = pytest.mark.django_db

MANAGE = ["keys:read", "keys:write", "pages:read", "pages:write"]


def call(client, method, path, secret, body=None):
    extra = {"content_type": "application/json"} if body is not None else {}
    data = json.dumps(body) if body is not None else None
    send = getattr(client, method.lower())
    return send(f"/api/v1{path}", *([data] if data is not None else []), **extra, **auth(secret))


@pytest.fixture
def owner_key(owner, workspace):
    return make_key(user=owner, workspace=workspace, scopes=MANAGE)


@pytest.fixture
def account(client, owner_key):
    made = call(client, "POST", "/service-accounts", owner_key.secret, {"name": "CI deploy"})
    assert made.status_code == 201, made.content
    return made.json()


def account_key(client, owner_key, account, scopes=("pages:read",), **extra):
    made = call(
        client,
        "POST",
        f"/service-accounts/{account['id']}/keys",
        owner_key.secret,
        {"name": "Deploys", "scopes": list(scopes), **extra},
    )
    assert made.status_code == 201, made.content
    return made.json()


def test_an_owner_makes_a_service_account_with_an_undeliverable_address(client, account):
    assert account["name"] == "CI deploy"
    assert account["userEmail"].endswith(".invalid")
    assert account["createdBy"] == "owner@acme.test"
    assert account["liveKeys"] == 0 and account["lastUsedAt"] is None
    membership = Membership.objects.get(user__email=account["userEmail"])
    assert membership.role == Membership.Role.ADMIN
    assert AuditEvent.objects.filter(action="service_account.created").count() == 1


def test_its_key_answers_as_the_account_and_names_it(client, owner_key, account):
    created = account_key(client, owner_key, account)
    assert created["serviceAccount"] == {"id": account["id"], "name": "CI deploy"}
    assert created["holderEmail"] == account["userEmail"]
    answer = client.get("/api/v1/workspace", **auth(created["secret"]))
    assert answer.status_code == 200
    assert answer.json()["userEmail"] == account["userEmail"]
    listed = call(client, "GET", f"/keys?holder=service:{account['id']}", owner_key.secret)
    assert [k["id"] for k in listed.json()["data"]] == [created["id"]]
    mine = call(client, "GET", "/keys?holder=owner@acme.test", owner_key.secret)
    assert created["id"] not in [k["id"] for k in mine.json()["data"]]


def test_a_person_s_key_record_names_no_service_account(client, owner_key):
    record = call(client, "GET", f"/keys/{owner_key.key.pk}", owner_key.secret).json()
    assert record["serviceAccount"] is None


def test_a_bad_holder_filter_is_bad_input(client, owner_key):
    answer = call(client, "GET", "/keys?holder=service:abc", owner_key.secret)
    assert answer.status_code == 400 and answer.json()["error"] == "invalid-input"


def test_admins_cannot_make_service_accounts_or_their_keys(client, owner_key, account, admin):
    admin_key = make_key(user=admin, scopes=MANAGE)
    made = call(client, "POST", "/service-accounts", admin_key.secret, {"name": "Mine"})
    assert made.status_code == 403 and made.json()["error"] == "insufficient-role"
    key = call(
        client,
        "POST",
        f"/service-accounts/{account['id']}/keys",
        admin_key.secret,
        {"name": "x", "scopes": ["pages:read"]},
    )
    assert key.status_code == 403 and key.json()["error"] == "insufficient-role"


def test_admins_see_service_account_keys_in_the_inventory_and_may_revoke_them(
    client, owner_key, account, admin
):
    created = account_key(client, owner_key, account)
    admin_key = make_key(user=admin, scopes=MANAGE)
    listed = call(client, "GET", "/keys", admin_key.secret).json()["data"]
    assert created["id"] in [k["id"] for k in listed]
    rolled = call(client, "POST", f"/keys/{created['id']}/roll", admin_key.secret, {})
    assert rolled.status_code == 403 and rolled.json()["error"] == "insufficient-role"
    assert call(client, "DELETE", f"/keys/{created['id']}", admin_key.secret).status_code == 204
    assert client.get("/api/v1/workspace", **auth(created["secret"])).status_code == 401


def test_an_owner_rolls_a_service_account_key_and_receives_the_secret(client, owner_key, account):
    created = account_key(client, owner_key, account)
    rolled = call(client, "POST", f"/keys/{created['id']}/roll", owner_key.secret, {})
    assert rolled.status_code == 200, rolled.content
    assert client.get("/api/v1/workspace", **auth(rolled.json()["secret"])).status_code == 200
    assert client.get("/api/v1/workspace", **auth(created["secret"])).status_code == 401


def test_its_key_mints_keys_of_the_same_account_never_wider(client, owner_key, account):
    parent = account_key(client, owner_key, account, scopes=("keys:write", "pages:read"))
    child = call(
        client, "POST", "/keys", parent["secret"], {"name": "Child", "scopes": ["pages:read"]}
    )
    assert child.status_code == 201, child.content
    assert child.json()["serviceAccount"]["id"] == account["id"]
    wider = call(
        client, "POST", "/keys", parent["secret"], {"name": "Wider", "scopes": ["pages:write"]}
    )
    assert wider.status_code == 403 and wider.json()["error"] == "insufficient-scope"


def test_its_key_cannot_change_owner_only_settings(client, owner_key, account):
    created = account_key(client, owner_key, account, scopes=("keys:write", "pages:write"))
    for path, body in (
        ("/workspace", {"timezone": "UTC"}),
        ("/workspace/policy", {"idleDays": 90}),
    ):
        answer = call(client, "PATCH", path, created["secret"], body)
        assert answer.status_code == 403 and answer.json()["error"] == "insufficient-role"


def test_owner_made_keys_never_wait_and_its_own_mints_wait_like_an_admin_s(
    client, owner_key, account
):
    policy = call(client, "PATCH", "/workspace/policy", owner_key.secret, {"approval": "all"})
    assert policy.status_code == 200
    parent = account_key(client, owner_key, account, scopes=("keys:write", "pages:read"))
    assert parent["state"] == "active"
    child = call(
        client, "POST", "/keys", parent["secret"], {"name": "Child", "scopes": ["pages:read"]}
    )
    assert child.json()["state"] == "pending"


def test_removing_the_owner_who_made_it_changes_nothing(client, workspace, owner_key, account):
    from apps.audit.services import Actor
    from apps.workspaces.services import team_remove
    from tests.factories import owner_of

    created = account_key(client, owner_key, account)
    second_owner = owner_of(workspace, email="second@acme.test")
    maker = Membership.objects.get(workspace=workspace, user__email="owner@acme.test")
    team_remove(membership=maker, actor=Actor.of_user(second_owner))
    assert client.get("/api/v1/workspace", **auth(created["secret"])).status_code == 200


def test_deleting_it_revokes_every_key_at_once_audited(client, owner_key, account):
    first = account_key(client, owner_key, account)
    second = account_key(client, owner_key, account)
    gone = call(client, "DELETE", f"/service-accounts/{account['id']}", owner_key.secret)
    assert gone.status_code == 204
    for created in (first, second):
        answer = client.get("/api/v1/workspace", **auth(created["secret"]))
        assert answer.status_code == 401 and answer.json()["error"] == "revoked-key"
    assert call(client, "GET", "/service-accounts", owner_key.secret).json()["data"] == []
    again = call(client, "GET", f"/service-accounts/{account['id']}", owner_key.secret)
    assert again.status_code == 404
    event = AuditEvent.objects.get(action="service_account.deleted")
    assert event.data["keysRevoked"] == 2
    assert ApiKey.objects.filter(user__email=account["userEmail"], revoked_at=None).count() == 0


def test_a_rename_is_audited_and_bad_input_changes_nothing(client, owner_key, account):
    path = f"/service-accounts/{account['id']}"
    bad = call(client, "PATCH", path, owner_key.secret, {"name": "ok", "colour": "red"})
    assert bad.status_code == 400
    blank = call(client, "PATCH", path, owner_key.secret, {"name": "  "})
    assert blank.status_code == 400
    not_text = call(client, "PATCH", path, owner_key.secret, {"description": {}})
    assert not_text.status_code == 400 and "description" in not_text.json()["message"]
    made = call(
        client, "POST", "/service-accounts", owner_key.secret, {"name": "x", "description": []}
    )
    assert made.status_code == 400
    renamed = call(client, "PATCH", path, owner_key.secret, {"name": "Deploy bot"})
    assert renamed.json()["name"] == "Deploy bot"
    assert call(client, "GET", path, owner_key.secret).json()["name"] == "Deploy bot"
    assert AuditEvent.objects.filter(action="service_account.updated").count() == 1


def test_another_workspace_s_account_is_not_found(client, account, stranger):
    theirs = make_key(user=stranger, scopes=MANAGE)
    answer = call(client, "GET", f"/service-accounts/{account['id']}", theirs.secret)
    assert answer.status_code == 404


def test_nothing_is_ever_mailed_to_its_address(client, owner_key, account):
    created = account_key(client, owner_key, account)
    mail.outbox.clear()
    from django.test import Client as Browser

    Browser().post("/account/password/reset/", {"email": account["userEmail"]})
    Browser().post("/account/login/code/", {"email": account["userEmail"]})
    run_tasks()
    assert not [m for m in mail.outbox if account["userEmail"] in m.to]
    assert created["secret"] not in "".join(m.body for m in mail.outbox)
