"""Settings → Audit streaming as an owner uses it, and `/audit-streams` as an owner's key
does: add (an HTTPS stream's secret once, its header values never again), the filter, a test
event, pause and resume, lag and last error on the page, remove; nobody else gets in; a stream
failing for AUDIT_STREAM_DAYS is disabled and its owners e-mailed."""

import re
from datetime import timedelta

import pytest
import time_machine
from django.core import mail
from django.utils import timezone

from apps.api.scopes import EVERY_SCOPE
from apps.audit.models import AuditEvent
from apps.audit_streams.models import AuditStream, AuditStreamItem
from apps.audit_streams.sending import syslog_frame
from tests.conftest import auth, run_tasks
from tests.factories import make_key
from tests.webhooks.receiver import receiver

from .syslog_receiver import make_ca_and_server

pytestmark = pytest.mark.django_db(transaction=True)
PAGE = "/settings/audit-streaming/"


def add_https(client, url: str, headers: str = "Authorization: Bearer canary-0001", events=()):
    return client.post(
        PAGE,
        {
            "kind": "https",
            "https-name": "Splunk",
            "https-url": url,
            "https-headers": headers,
            "https-events": list(events),
        },
    )


def test_an_owner_adds_a_stream_sees_its_secret_once_and_its_test_event_arrives(client, owner):
    empty = client.get(PAGE).content.decode()
    assert "No audit streams yet" in empty and 'name="csrfmiddlewaretoken"' in empty
    with receiver() as siem:
        page = add_https(client, siem.url, events=["key.revoked", "settings.changed"])
        assert page.status_code == 200 and page["Cache-Control"] == "no-store"
        secret = re.search(r'data-testid="new-secret">(whsec_[^<]+)<', page.content.decode())[1]
        listing = client.get(PAGE).content.decode()
        assert secret not in listing and "canary-0001" not in listing
        assert "Authorization" in listing and "2 actions" in listing
        response = client.post(f"{PAGE}{AuditStream.objects.get().pk}/test/", follow=True)
        assert "Test event test_" in response.content.decode()
        run_tasks()
        (batch,) = siem.received
    # The page's own Python snippet, run as a newcomer would paste it (it imports what it uses).
    import html as html_text

    snippet = re.search(r'<code id="verify-snippet">(.*?)</code>', page.content.decode(), re.S)
    scope = {"request_body": batch.body.decode(), "request_headers": batch.headers}
    exec(html_text.unescape(snippet[1]), scope)  # noqa: S102 - our own page's snippet
    (event,) = scope["events"]
    assert event["action"] == "audit_stream.test" and event["id"].startswith("test_")
    assert batch.headers["authorization"] == "Bearer canary-0001"
    listing = client.get(PAGE).content.decode()
    assert "Up to date" in listing and "1 event sent" in listing
    assert AuditEvent.objects.filter(action="audit_stream.created").exists()


def test_the_page_shows_lag_and_the_last_error_and_pauses_resumes_and_removes(client, owner):
    with receiver(answers=[500]) as siem:
        add_https(client, siem.url, headers="")
        stream = AuditStream.objects.get()
        run_tasks()
        page = client.get(PAGE).content.decode()
        assert "Failing" in page and "answered 500" in page
        assert "1 event" in page and "oldest" in page  # the backlog, and its age
        client.post(f"{PAGE}{stream.pk}/pause-or-resume/")
        assert "Paused" in client.get(PAGE).content.decode()
        client.post(f"{PAGE}{stream.pk}/pause-or-resume/")
        run_tasks()
    stream.refresh_from_db()
    assert stream.enabled and not AuditStreamItem.objects.filter(stream=stream).count() > 1
    client.post(f"{PAGE}{stream.pk}/remove/")
    assert not AuditStream.objects.exists()
    actions = list(AuditEvent.objects.order_by("pk").values_list("action", flat=True))
    assert (
        actions[-4:]
        == [
            "audit_stream.created",
            "audit_stream.paused",
            "audit_stream.resumed",
            "audit_stream.deleted",
        ][-4:]
    )


def test_bad_input_is_named_and_loopback_https_is_refused_in_production(client, owner, settings):
    page = add_https(client, "https://x.example/in", headers="no colon here")
    assert page.status_code == 400 and "Write each header as Name: value" in page.content.decode()
    page = add_https(client, "https://x.example/in", headers="webhook-id: mine")
    assert "set by the delivery" in page.content.decode()
    bad_ca = client.post(
        PAGE,
        {
            "kind": "syslog",
            "syslog-name": "s",
            "syslog-host": "siem.example",
            "syslog-port": 6514,
            "syslog-ca_certificate": "-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----",
        },
    )
    assert "no readable certificate" in bad_ca.content.decode()
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    page = add_https(client, "http://127.0.0.1:9/in")
    assert "Use https://" in page.content.decode() and not AuditStream.objects.exists()


def test_only_owners_see_the_page(client, owner, admin):
    client.force_login(admin)
    assert client.get(PAGE).status_code == 403
    assert client.post(PAGE, {"kind": "https"}).status_code == 403


def test_the_api_adds_lists_and_removes_streams_for_owners_keys(client, owner, admin, tmp_path):
    key = make_key(user=owner, scopes=EVERY_SCOPE)
    ca_pem, *_ = make_ca_and_server(tmp_path)
    made = client.post(
        "/api/v1/audit-streams",
        {
            "kind": "syslog",
            "name": "SIEM",
            "host": "siem.example.com",
            "port": 6514,
            "caCertificate": ca_pem,
            "events": ["cli.login"],
        },
        content_type="application/json",
        **auth(key.secret),
    )
    assert made.status_code == 201, made.content
    assert made.json()["secret"] is None and made.json()["stream"]["state"] == "active"
    https = client.post(
        "/api/v1/audit-streams",
        {
            "kind": "https",
            "name": "Hook",
            "url": "https://siem.example.com/in",
            "headers": {"X-Token": "canary-0002"},
        },
        content_type="application/json",
        **auth(key.secret),
    )
    assert https.status_code == 201 and https.json()["secret"].startswith("whsec_")
    listed = client.get("/api/v1/audit-streams", **auth(key.secret))
    assert listed.status_code == 200 and "canary-0002" not in listed.content.decode()
    assert [s["name"] for s in listed.json()["data"]] == ["SIEM", "Hook"]
    assert listed.json()["data"][1]["headers"] == ["X-Token"]
    bad = client.post(
        "/api/v1/audit-streams",
        {"kind": "syslog", "name": "x", "host": "siem.example.com", "port": 0, "caCertificate": ""},
        content_type="application/json",
        **auth(key.secret),
    )
    assert bad.status_code == 400
    reader = make_key(user=owner, scopes=["keys:read"])
    refused = client.delete(
        f"/api/v1/audit-streams/{made.json()['stream']['id']}", **auth(reader.secret)
    )
    assert refused.status_code == 403
    admins = make_key(user=admin, scopes=EVERY_SCOPE)
    assert client.get("/api/v1/audit-streams", **auth(admins.secret)).status_code == 403
    gone = client.delete(f"/api/v1/audit-streams/{made.json()['stream']['id']}", **auth(key.secret))
    assert gone.status_code == 204 and AuditStream.objects.count() == 1


def test_a_stream_failing_for_seven_days_is_disabled_and_its_owners_emailed(client, owner):
    with receiver(answers=[500] * 50) as siem:
        add_https(client, siem.url, headers="")
        run_tasks()
        stream = AuditStream.objects.get()
        assert stream.enabled and stream.failing_since
        with time_machine.travel(timezone.now() + timedelta(days=7, minutes=1)):
            run_tasks()
    stream.refresh_from_db()
    assert not stream.enabled and "7 days" in stream.disabled_reason
    run_tasks()
    (message,) = [m for m in mail.outbox if "Audit stream disabled" in m.subject]
    assert message.to == [owner.email] and "Splunk" in message.body
    assert "Disabled" in client.get(PAGE).content.decode()


def test_a_syslog_frame_counts_its_octets():
    record = {
        "id": "7",
        "time_utc": "2026-11-27T20:00:00+00:00",
        "action": "key.created",
        "workspace": {"id": "1", "name": "Café ]"},
    }
    frame = syslog_frame(record, "gatehouse.example")
    length, _, message = frame.partition(b" ")
    assert int(length) == len(message)
    assert b'workspaceName="Caf\xc3\xa9 \\]"' in message


def test_member_of_another_workspace_cannot_touch_a_stream(client, owner, stranger):
    add_https(client, "https://siem.example.com/in", headers="")
    stream = AuditStream.objects.get()
    client.force_login(stranger)
    assert client.post(f"{PAGE}{stream.pk}/remove/").status_code == 404
    assert AuditStream.objects.exists()


def test_without_javascript_remove_asks_first(client, owner):
    add_https(client, "https://siem.example.com/in", headers="")
    stream = AuditStream.objects.get()
    page = client.get(f"{PAGE}{stream.pk}/remove/").content.decode()
    assert "Remove “Splunk”?" in page and "Remove stream" in page
    assert AuditStream.objects.exists()


@pytest.mark.parametrize(
    "body",
    [
        {"kind": "https", "name": "x", "url": {}},
        {"kind": "https", "name": "x", "url": "https://a.example", "events": "key.created"},
        {"kind": "https", "name": "x", "url": "https://a.example", "headers": ["X: y"]},
        {"kind": "syslog", "name": "x", "host": ["a"], "port": 6514, "caCertificate": "x"},
        {"kind": "ftp", "name": "x"},
    ],
)
def test_a_body_of_the_wrong_types_is_refused_naming_the_field(client, owner, body):
    key = make_key(user=owner, scopes=EVERY_SCOPE)
    answer = client.post(
        "/api/v1/audit-streams", body, content_type="application/json", **auth(key.secret)
    )
    assert answer.status_code == 400 and answer.json()["error"] == "invalid-input"


def test_a_long_stream_url_is_shown_whole_never_cut(client, owner):
    long_url = "https://siem.example.com/services/collector/event/" + "x" * 120 + "?channel=audit"
    with receiver():
        add_https(client, long_url)
    page = client.get(PAGE).content.decode()
    shown = re.search(r'data-testid="stream-destination">(.*?)</span>', page, re.S)[1]
    assert shown.replace("<wbr>", "").replace("&amp;", "&") == long_url
