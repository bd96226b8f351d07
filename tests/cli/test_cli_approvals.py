"""Approvals at the terminal: `gatehouse policy set --approval`, `keys list --state pending`,
`keys approve` and `keys deny --reason`, as a subprocess against a live server."""

import json

import pytest

from apps.api.scopes import ALL_SCOPES, KEY_SCOPES
from apps.api_keys.models import ApiKey
from tests.cli.test_cli import env, run  # noqa: F401 - the fixture
from tests.factories import MembershipFactory, UserFactory, make_key, owner_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_owner_turns_approval_on_and_decides_from_the_terminal(env, live_server):  # noqa: F811
    owner = owner_of(email="owner@acme.test")
    workspace = owner.memberships.get().workspace
    admin = UserFactory(email="admin@acme.test")
    MembershipFactory(workspace=workspace, user=admin, role="admin")
    every = [*ALL_SCOPES, *KEY_SCOPES]
    owner_key = make_key(user=owner, scopes=every)
    admin_key = make_key(user=admin, workspace=workspace, scopes=every)
    as_owner = {**env, "GATEHOUSE_API_KEY": owner_key.secret, "GATEHOUSE_URL": live_server.url}
    as_admin = {**as_owner, "GATEHOUSE_API_KEY": admin_key.secret}

    policy = run(as_owner, "--json", "policy", "set", "--approval", "write")
    assert policy.returncode == 0, policy.stderr
    assert json.loads(policy.stdout)["approval"] == "write"
    assert "write" in run(as_owner, "policy", "get").stdout
    one = make_key(user=admin, workspace=workspace, name="Publisher", scopes=["pages:write"])
    two = make_key(user=admin, workspace=workspace, name="Importer", scopes=["products:write"])
    assert one.key.state == two.key.state == "pending"

    listed = run(as_owner, "keys", "list", "--state", "pending").stdout
    assert "Publisher" in listed and "Importer" in listed and "Owner" not in listed
    refused = run(as_admin, "keys", "approve", str(one.key.pk))
    assert refused.returncode == 1
    assert "(insufficient-role)" in refused.stderr and refused.stderr.count("\n") == 1

    approved = run(as_owner, "--json", "keys", "approve", str(one.key.pk))
    assert approved.returncode == 0, approved.stderr
    assert json.loads(approved.stdout)["state"] == "active"
    denied = run(as_owner, "keys", "deny", str(two.key.pk), "--reason", "Use the shared importer")
    assert denied.returncode == 0, denied.stderr
    assert ApiKey.objects.get(pk=two.key.pk).denial_reason == "Use the shared importer"
    again = run(as_owner, "keys", "approve", str(two.key.pk))
    assert again.returncode == 1 and "(conflict)" in again.stderr
    assert "denied" in again.stderr
