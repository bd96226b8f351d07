"""The sign-in events reach the audit streams (docs/product.md §14): a person's sign-ins, failed
ones and second-factor changes are audit events in each of their workspaces, so a security
team reads them in its own tools, verified by the `standardwebhooks` library."""

import json

import pytest
from django.test import Client
from standardwebhooks.webhooks import Webhook

from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.audit_streams.models import AuditStreamItem
from apps.audit_streams.services import stream_create
from apps.workspaces.models import Membership
from tests.audit_streams.test_https_stream import run_until
from tests.factories import PASSWORD, WorkspaceFactory, owner_of
from tests.webhooks.receiver import receiver

pytestmark = pytest.mark.django_db(transaction=True)


def sign_in(password: str, address: str) -> int:
    answer = Client().post(
        "/sign-in/",
        {"login": "owner@example.com", "password": password},
        HTTP_X_FORWARDED_FOR=address,
    )
    return answer.status_code


def test_sign_ins_and_failed_ones_reach_every_workspace_of_the_person_and_its_stream(settings):
    settings.TRUSTED_PROXY_COUNT = 1
    owner = owner_of(email="owner@example.com")
    workspace = owner.memberships.get().workspace
    elsewhere = WorkspaceFactory(name="Elsewhere")
    Membership.objects.create(workspace=elsewhere, user=owner, role=Membership.Role.ADMIN)
    with receiver() as siem:
        stream = stream_create(
            workspace,
            kind="https",
            name="SIEM",
            url=siem.url,
            events=["account.signed_in", "account.sign_in_failed"],
            actor=Actor.of_user(owner),
        )
        assert sign_in("wrong", "198.51.100.66") == 200
        assert sign_in(PASSWORD, "203.0.113.5") == 302
        run_until(lambda: not AuditStreamItem.objects.exists() and siem.received)
    hook = Webhook(stream.secret)
    lines = []
    for request in siem.received:
        hook.verify(request.body, request.headers, json_parse=False)  # raises if forged
        lines += [json.loads(line) for line in request.body.decode().splitlines()]
    assert [(line["action"], line["ip"]) for line in lines] == [
        ("account.sign_in_failed", "198.51.100.66"),
        ("account.signed_in", "203.0.113.5"),
    ]
    assert lines[0]["actor"] == "someone not signed in"
    assert lines[1]["actor"] == "owner@example.com"
    assert PASSWORD not in json.dumps(lines) and "wrong" not in json.dumps(lines)
    # The other workspace's audit log has them too; its Audit page words them.
    there = AuditEvent.objects.filter(workspace=elsewhere).values_list("action", flat=True)
    assert sorted(there) == ["account.sign_in_failed", "account.signed_in"]
    failed = AuditEvent.objects.get(workspace=elsewhere, action="account.sign_in_failed")
    assert failed.actor_user_id is None and failed.subject == "owner@example.com"


def test_an_unknown_address_leaves_no_event_anywhere():
    owner_of(email="someone@example.com")
    assert (
        Client().post("/sign-in/", {"login": "nobody@example.com", "password": "x"}).status_code
        == 200
    )
    assert not AuditEvent.objects.filter(action__startswith="account.").exists()
