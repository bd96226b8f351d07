"""With audit streams on, concurrent key changes never deadlock into a 500 and never lose a
revoke (issue 49): 8 streams, 8 clients, 400 creates, rolls, narrows, revokes and workspace
PATCHes over HTTP against a live server on PostgreSQL. Every change that answered 2xx happened,
and every audit event has exactly one outbox row in each stream, numbered once."""

import random
import threading
from collections import Counter
from datetime import timedelta

import httpx2
import pytest
from django.db.models import Count

from apps.api.scopes import EVERY_SCOPE
from apps.api_keys.models import ApiKey
from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.audit_streams.models import AuditStreamItem
from apps.audit_streams.services import stream_create
from tests.factories import WorkspaceFactory, make_key, owner_of

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
STREAMS, CLIENTS, CHANGES = 8, 8, 400


def test_concurrent_changes_with_eight_streams_answer_no_500_and_lose_no_revoke(
    live_server, settings
):
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    workspace = WorkspaceFactory()
    owner = owner_of(workspace)
    for n in range(STREAMS):
        stream_create(
            workspace,
            kind="https",
            name=f"SIEM {n}",
            url=f"https://siem-{n}.example.test/ingest",
            actor=Actor.of_user(owner),
        )
    manager = make_key(user=owner, scopes=EVERY_SCOPE, name="Manager").secret
    # Shorter-lived than the manager's key, so that rolling them hands out nothing wider.
    targets = [
        make_key(
            user=owner, scopes=["pages:read", "pages:write"], expires_in=timedelta(days=30)
        ).key.pk
        for _ in range(80)
    ]
    first_event = AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first()

    lock = threading.Lock()
    statuses: Counter[tuple[str, int]] = Counter()
    revoked_ok: set[int] = set()
    plan = random.Random(49)
    work = [(plan.choice(["create", "roll", "narrow", "revoke", "patch"]), plan.choice(targets))
            for _ in range(CHANGES)]  # fmt: skip

    def change(http: httpx2.Client, kind: str, key_id: int) -> int:
        if kind == "create":
            body = {"name": "Made under load", "scopes": ["pages:read"], "expiresInDays": 30}
            return http.post("/keys", json=body).status_code
        if kind == "roll":
            return http.post(f"/keys/{key_id}/roll", json={"graceSeconds": 0}).status_code
        if kind == "narrow":
            return http.post(f"/keys/{key_id}/narrow", json={"scopes": ["pages:read"]}).status_code
        if kind == "revoke":
            status = http.delete(f"/keys/{key_id}").status_code
            if status < 300:
                with lock:
                    revoked_ok.add(key_id)
            return status
        return http.patch("/workspace", json={"workspaceName": f"Acme {key_id}"}).status_code

    def client(share: list[tuple[str, int]]) -> None:
        with httpx2.Client(
            base_url=f"{live_server.url}/api/v1",
            headers={"Authorization": f"Bearer {manager}"},
            timeout=30,
        ) as http:
            for kind, key_id in share:
                status = change(http, kind, key_id)
                with lock:
                    statuses[(kind, status)] += 1

    threads = [threading.Thread(target=client, args=(work[n::CLIENTS],)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    print("answers by change and status:", dict(sorted(statuses.items())))
    assert sum(statuses.values()) == CHANGES
    assert [k for k in statuses if k[1] >= 500] == [], statuses
    assert revoked_ok, "the mix revoked nothing"
    still_active = ApiKey.objects.filter(pk__in=revoked_ok, revoked_at__isnull=True)
    assert list(still_active.values_list("pk", flat=True)) == []

    events = AuditEvent.objects.filter(workspace=workspace, pk__gt=first_event or 0)
    # Every create and roll that answered is audited (a PATCH to the same name, or a second
    # revoke of a key, changes nothing and is not).
    made = statuses[("create", 201)] + statuses[("roll", 200)]
    assert events.filter(action__in=["key.created", "key.rolled"]).count() == made
    per_event = (
        AuditStreamItem.objects.filter(event__in=events)
        .values("event")
        .annotate(n=Count("id"))
        .values_list("n", flat=True)
    )
    assert len(per_event) == events.count() and set(per_event) == {STREAMS}
    numbers = AuditStreamItem.objects.values_list("stream_id", "seq")
    assert len(numbers) == len(set(numbers))  # each number given once in its stream
