"""Settings → Audit streaming in Chromium at 1280 and 390 px: streams in each state (up to
date, failing with a backlog and its error, paused), nothing wider than the screen; an owner
adds an HTTPS stream, copies its secret from the page that shows it once, and sends a test
event that arrives. Its screenshots are docs/screenshots/{desktop,phone}-audit-streaming.png."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from apps.audit.services import Actor
from apps.audit_streams.models import AuditStream, AuditStreamItem
from apps.audit_streams.services import stream_create, stream_set_enabled
from tests.audit_streams.syslog_receiver import make_ca_and_server
from tests.browser.test_dashboard import sign_in
from tests.browser.test_every_page import OUT_OF_BOUNDS, WIDTHS
from tests.conftest import run_tasks
from tests.factories import make_key, owner_of
from tests.webhooks.receiver import receiver

pytestmark = pytest.mark.django_db(transaction=True)


def seed(owner, tmp_path) -> None:
    """Three streams as a workspace has them after a while: one up to date, one failing with
    events waiting, one paused."""
    workspace, actor = owner.memberships.get().workspace, Actor.of_user(owner)
    now = timezone.now()
    splunk = stream_create(
        workspace,
        kind="https",
        name="Splunk HEC",
        url="https://splunk.acme.example/services/collector/raw",
        headers={"Authorization": "Splunk 3f1c0000"},
        actor=actor,
    ).stream
    AuditStreamItem.objects.filter(stream=splunk).delete()
    AuditStream.objects.filter(pk=splunk.pk).update(
        last_delivery_at=now - timedelta(minutes=3), delivered_count=1284
    )
    ca_pem, *_ = make_ca_and_server(tmp_path)
    syslog = stream_create(
        workspace,
        kind="syslog",
        name="SOC rsyslog",
        host="logs.soc.acme.example",
        port=6514,
        ca_certificate=ca_pem,
        events=["key.created", "key.revoked", "cli.login"],
        actor=actor,
    ).stream
    for name in ("Zapier sync", "Nightly export"):
        make_key(user=owner, name=name)  # key.created: waiting for the failing stream
    AuditStreamItem.objects.filter(stream=syslog).update(created_at=now - timedelta(minutes=42))
    AuditStream.objects.filter(pk=syslog.pk).update(
        failures=6,
        failing_since=now - timedelta(minutes=42),
        next_attempt_at=now + timedelta(minutes=25),
        last_error="Could not connect to logs.soc.acme.example:6514: [Errno 111] Connection "
        "refused",
        last_error_at=now - timedelta(minutes=5),
        last_delivery_at=now - timedelta(hours=2),
        delivered_count=311,
    )
    paused = stream_create(
        workspace,
        kind="https",
        name="Datadog (staging)",
        url="https://http-intake.logs.datadoghq.eu/api/v2/logs",
        headers={"DD-API-KEY": "0000"},
        actor=actor,
    ).stream
    stream_set_enabled(paused, False, actor=actor)
    AuditStreamItem.objects.filter(stream=splunk).delete()  # it sent what the others made


def test_the_page_at_both_widths_and_an_owner_adds_a_stream_and_tests_it(
    page, live_server, settings, shoot, tmp_path
):
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    owner = owner_of(email="owner@acme.test")
    seed(owner, tmp_path)
    sign_in(page, "owner@acme.test")
    for width, pixels in WIDTHS.items():
        page.set_viewport_size({"width": pixels, "height": 900})
        page.goto("/settings/audit-streaming/")
        expect(page.locator("nav a[aria-current=page], nav a.active").first).to_contain_text(
            "Audit streaming"
        )
        expect(page.locator("#streams")).to_contain_text("Failing")
        expect(page.locator("#streams")).to_contain_text("Paused")
        expect(page.locator("#streams")).to_contain_text("Connection refused")
        shoot(page, f"{width}-audit-streaming")
        assert page.evaluate("document.documentElement.scrollWidth") <= pixels, width
        assert not page.evaluate(OUT_OF_BOUNDS), width

    page.set_viewport_size({"width": 1280, "height": 900})
    with receiver() as siem:
        page.fill("#id_https-name", "Our SIEM")
        page.fill("#id_https-url", siem.url)
        page.fill("#id_https-headers", "Authorization: Bearer canary-0003")
        page.click("button:has-text('Add HTTPS stream')")
        secret = page.locator("[data-testid=new-secret]").inner_text()
        assert secret.startswith("whsec_")
        page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        page.click("button.copy[data-copy-target='#new-secret']")
        assert page.evaluate("navigator.clipboard.readText()") == secret
        page.click("text=Done, to Audit streaming")
        assert secret not in page.content() and "canary-0003" not in page.content()
        row = page.locator("tr", has_text="Our SIEM")
        row.locator("button:has-text('Send test event')").click()
        expect(page.locator(".flashes")).to_contain_text("Test event test_")
        run_tasks()
        expect(page.locator("tr", has_text="Our SIEM")).to_contain_text(
            "Up to date", timeout=12_000
        )
    assert any(b"audit_stream.test" in r.body for r in siem.received)
    row = page.locator("tr", has_text="Datadog (staging)")
    row.get_by_role("button", name="Remove Datadog (staging)").click()
    dialog = page.locator("dialog#confirm-dialog")
    assert "Remove “Datadog (staging)”?" in dialog.text_content()
    dialog.get_by_role("button", name="Remove stream").click()
    expect(page.locator(".flashes")).to_contain_text("“Datadog (staging)” removed")
    assert not AuditStream.objects.filter(name="Datadog (staging)").exists()
