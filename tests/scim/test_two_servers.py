"""Two app servers on PostgreSQL: the identity provider suspends a person through one, and their
key is refused by the other on its very next request; restored through the other, it answers
on both again. No cache stands between the provider's word and the key (docs/product.md §16)."""

import json

import pytest
import requests

from apps.audit.services import Actor
from apps.scim.tokens import scim_token_create
from apps.workspaces.models import Membership
from tests.factories import MembershipFactory, UserFactory, WorkspaceFactory, make_key, owner_of
from tests.jobs.test_workers import _database_env
from tests.operations.live import gunicorn

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_a_suspension_through_one_server_is_refused_by_the_other_at_once(tmp_path):
    workspace = WorkspaceFactory(name="Two servers")
    owner = owner_of(workspace)
    person = UserFactory(email="leaver@acme.com")
    membership = MembershipFactory(workspace=workspace, user=person, role=Membership.Role.ADMIN)
    key = make_key(user=person, workspace=workspace).secret
    scim = scim_token_create(workspace=workspace, name="Okta", actor=Actor.of_user(owner)).secret
    env = {**_database_env(), "DEBUG": "true", "LOG_LEVEL": "WARNING", "HOME": str(tmp_path)}
    env.pop("REDIS_URL", None)
    bearer = {"Authorization": f"Bearer {key}"}

    def active(base: str, value: object) -> None:
        answer = requests.patch(
            f"{base}/scim/v2/Users/{membership.pk}",
            data=json.dumps({"Operations": [{"op": "Replace", "path": "active", "value": value}]}),
            headers={"Authorization": f"Bearer {scim}", "Content-Type": "application/scim+json"},
            timeout=10,
        )
        assert answer.status_code == 200, answer.text

    with (
        gunicorn(env, tmp_path / "one.log") as (one, _),
        gunicorn(env, tmp_path / "two.log") as (two, _),
    ):
        for base in (one, two):  # each has looked the key up once, as a busy server would have
            assert requests.get(f"{base}/api/v1/workspace", headers=bearer, timeout=10).ok
        active(one, "False")
        refused = requests.get(f"{two}/api/v1/workspace", headers=bearer, timeout=10)
        assert refused.status_code == 401 and refused.json()["error"] == "suspended-key"
        active(two, "True")
        for base in (one, two):
            assert requests.get(f"{base}/api/v1/workspace", headers=bearer, timeout=10).ok
