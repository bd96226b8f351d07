"""An endpoint's page in Chromium: "Send test event" says the delivery shows below within
seconds, and the log refreshes itself until it does."""

import pytest
from playwright.sync_api import expect

from apps.audit.services import Actor
from apps.webhooks.services import endpoint_create
from tests.browser.test_dashboard import sign_in
from tests.conftest import run_tasks
from tests.factories import owner_of
from tests.webhooks.receiver import receiver

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_test_event_appears_in_the_log_without_a_reload(page, live_server, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    owner = owner_of(email="owner@acme.test")
    with receiver() as hooks:
        endpoint = endpoint_create(
            owner.memberships.get().workspace,
            url=hooks.url,
            event_types=["key.revoked"],
            actor=Actor.of_user(owner),
        ).endpoint
        sign_in(page, "owner@acme.test")
        page.goto(f"/settings/webhooks/{endpoint.pk}/")
        page.click("button:has-text('Send test event')")
        expect(page.locator(".flashes")).to_contain_text("shows in the log below within seconds")
        expect(page.locator("#deliveries")).to_contain_text("Nothing sent yet")
        page.evaluate("window.notReloaded = true")
        run_tasks()  # the worker sends it
        expect(page.locator("#deliveries")).to_contain_text("webhook.ping", timeout=8000)
        expect(page.locator("#deliveries")).to_contain_text("Delivered")
        assert page.evaluate("window.notReloaded") is True
