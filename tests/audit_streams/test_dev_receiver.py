"""Audit streaming in development (PRODUCT §14, issue 54 item 12): the development server
receives streams itself at /dev/audit-streams/receive, shows each batch and its signature check
at /dev/audit-streams/, and Settings offers it; a test event goes at once, ahead of a failing
stream's backlog, and a success sends the backlog now instead of at the back-off's end."""

import re

import httpx
import pytest
from django.utils import timezone

from apps.audit.services import Actor
from apps.audit_streams.models import AuditStream, AuditStreamItem
from apps.audit_streams.services import stream_set_enabled
from tests.conftest import run_tasks
from tests.webhooks.receiver import receiver

from .test_pages_and_api import PAGE, add_https

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def development(settings):
    settings.DEBUG = True
    return settings


def test_settings_offers_the_development_receiver_and_it_shows_each_batch_checked(
    client, owner, live_server, development
):
    page = client.get(PAGE + "?try=dev-receiver").content.decode()
    assert 'data-testid="dev-receiver-offer"' in page
    receive = f"{live_server.url}/dev/audit-streams/receive"
    added = add_https(client, receive, headers="")
    assert added.status_code == 200, added.content.decode()[:2000]
    stream = AuditStream.objects.get()
    sent = client.post(f"{PAGE}{stream.pk}/test/", follow=True).content.decode()
    assert re.search(r"Test event test_\w+ delivered to “Splunk”", sent), sent[:3000]

    shown = client.get("/dev/audit-streams/").content.decode()
    assert shown.count('data-testid="dev-batch"') == 1
    assert "signature valid" in shown and "audit_stream.test" in shown
    assert "1 event" in shown

    # A batch signed with another secret is named as such, and answered 400.
    forged = httpx.post(
        receive,
        content=b'{"id":"1","action":"key.revoked"}\n',
        headers={
            "content-type": "application/x-ndjson",
            "webhook-id": "msg_1",
            "webhook-timestamp": str(int(timezone.now().timestamp())),
            "webhook-signature": "v1,AAAA",
        },
    )
    assert forged.status_code == 400
    assert "signature NOT valid" in client.get("/dev/audit-streams/").content.decode()


def test_the_development_receivers_are_gone_without_debug(client, owner):
    assert client.get("/dev/audit-streams/").status_code == 404
    assert (
        client.post("/dev/audit-streams/receive", data=b"x", content_type="text/plain").status_code
        == 404
    )


def test_the_webhook_receiver_names_a_batch_of_lines_instead_of_failing(client, development):
    answer = client.post(
        "/dev/webhooks/receive", data=b'{"a":1}\n{"b":2}\n', content_type="application/x-ndjson"
    )
    assert answer.status_code == 400
    assert "/dev/audit-streams/" in client.get("/dev/webhooks/").content.decode()


def test_a_test_event_jumps_a_failing_backlog_and_wakes_it(client, owner):
    with receiver(answers=[500]) as siem:
        add_https(client, siem.url)
        stream = AuditStream.objects.get()
        # Two audit events for it to send: pausing and resuming it.
        stream_set_enabled(stream, enabled=False, actor=Actor.of_user(owner))
        stream.refresh_from_db()
        stream_set_enabled(stream, enabled=True, actor=Actor.of_user(owner))
        run_tasks()  # the first batch fails (500): the stream waits to retry
        stream.refresh_from_db()
        assert stream.failures >= 1 and stream.next_attempt_at > timezone.now()
        backlog = AuditStreamItem.objects.filter(stream=stream).count()
        assert backlog >= 1
        # The endpoint is fixed: it answers 200 from now on.
        before = len(siem.received)
        done = client.post(f"{PAGE}{stream.pk}/test/", follow=True).content.decode()
        assert "delivered to “Splunk”, ahead of any waiting" in done
        assert len(siem.received) == before + 1
        assert b"audit_stream.test" in siem.received[-1].body
        assert b"audit_stream.test" not in siem.received[0].body  # none of the backlog's
        stream.refresh_from_db()
        assert stream.next_attempt_at is None
        run_tasks()  # the backlog goes now, not an hour from now
        assert not AuditStreamItem.objects.filter(stream=stream).exists()
        assert len(siem.received) == before + 2
