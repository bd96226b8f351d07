"""The account's security log in Chromium: a failed and a real sign-in, then the log from the
account menu."""

import pytest

from tests.browser.test_dashboard import sign_in
from tests.factories import owner_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_security_log_shows_a_failed_sign_in_from_the_account_menu(page, live_server, shoot):
    owner_of(email="owner@acme.test")
    page.goto("/sign-in/")
    page.fill("input[name=login]", "owner@acme.test")
    page.fill("input[name=password]", "not-the-password")
    page.click("main button[type=submit]")
    assert "do not match" in page.text_content("main")
    sign_in(page, "owner@acme.test")
    page.click("summary:has-text('owner@acme.test')")
    page.click("text=Security log")
    page.wait_for_url("**/account/security/")
    rows = page.locator("table tbody tr")
    assert rows.nth(0).locator(".badge").text_content() == "Signed in"
    assert rows.nth(1).locator(".badge").text_content() == "Failed sign-in"
    assert "127.0.0.1" in rows.nth(1).text_content()
    shoot(page, "62-security-log")
