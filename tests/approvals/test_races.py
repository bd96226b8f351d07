"""Decisions racing on PostgreSQL: of an approval and a denial of the same key at once exactly
one lands; a revocation during an approval leaves the key revoked. Many rounds, each with the
requests released together through the API."""

import json
import threading

import pytest
from django.db import connection
from django.test import Client

from apps.api.scopes import ALL_SCOPES, KEY_SCOPES
from apps.api_keys.models import ApiKey
from apps.audit.models import AuditEvent
from tests.factories import MembershipFactory, UserFactory, make_key, owner_of

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
ROUNDS = 15


def call(method: str, path: str, secret: str, body: dict | None = None):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    if method == "DELETE":
        return client.delete(f"/api/v1{path}")
    return client.post(f"/api/v1{path}", json.dumps(body or {}), content_type="application/json")


def together(*calls):
    """Run each (method, path, secret) in its own thread, released at once; their statuses."""
    barrier = threading.Barrier(len(calls))
    statuses: dict[int, int] = {}

    def run(index, args):
        try:
            barrier.wait()
            statuses[index] = call(*args).status_code
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [statuses[i] for i in range(len(calls))]


@pytest.fixture
def cast():
    owner = owner_of(email="owner@acme.test")
    workspace = owner.memberships.get().workspace
    other_owner = UserFactory(email="other@acme.test")
    MembershipFactory(workspace=workspace, user=other_owner, role="owner")
    admin = UserFactory(email="admin@acme.test")
    MembershipFactory(workspace=workspace, user=admin, role="admin")
    every = [*ALL_SCOPES, *KEY_SCOPES]
    keys = {
        "owner": make_key(user=owner, workspace=workspace, scopes=every).secret,
        "other": make_key(user=other_owner, workspace=workspace, scopes=every).secret,
        "admin": make_key(user=admin, workspace=workspace, scopes=every).secret,
    }
    workspace.key_approval = "write"
    workspace.save(update_fields=["key_approval"])
    return keys


def waiting_key(keys) -> int:
    created = call("POST", "/keys", keys["admin"], {"name": "Bot", "scopes": ["pages:write"]})
    assert created.json()["state"] == "pending"
    return created.json()["id"]


def test_an_approval_and_a_denial_at_once_exactly_one_wins(cast):
    for _ in range(ROUNDS):
        key_id = waiting_key(cast)
        statuses = together(
            ("POST", f"/keys/{key_id}/approve", cast["owner"]),
            ("POST", f"/keys/{key_id}/deny", cast["other"]),
        )
        assert sorted(statuses) == [200, 409]
        key = ApiKey.objects.get(pk=key_id)
        assert key.state == ("active" if statuses[0] == 200 else "denied")
        decisions = AuditEvent.objects.filter(key=key, action__in=["key.approved", "key.denied"])
        assert decisions.count() == 1


def test_a_revocation_during_an_approval_leaves_the_key_revoked(cast):
    outcomes = set()
    for _ in range(ROUNDS):
        key_id = waiting_key(cast)
        statuses = together(
            ("POST", f"/keys/{key_id}/approve", cast["owner"]),
            ("DELETE", f"/keys/{key_id}", cast["admin"]),
        )
        assert statuses[1] == 204
        assert statuses[0] in (200, 409)
        outcomes.add(statuses[0])
        assert ApiKey.objects.get(pk=key_id).state == "revoked"
    assert outcomes  # which came first varies; revoked wins either way
