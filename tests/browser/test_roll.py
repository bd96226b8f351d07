"""Rolling a key in Chromium: the new secret shown once, the old one working, then stopping."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from tests.browser.test_dashboard import api_get, sign_in
from tests.factories import make_key, owner_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_roll_in_the_browser_old_secret_works_through_the_grace_then_stops(
    page, live_server, shoot
):
    owner = owner_of(email="owner@acme.test")
    created = make_key(user=owner, name="Billing sync")
    sign_in(page, "owner@acme.test")
    row = page.locator("tr", has_text="Billing sync")
    row.locator("summary").click()  # the row's actions menu (⋯)
    row.locator("a:has-text('Roll')").click()
    page.check("input[name=grace][value='1h']")
    shoot(page, "12-roll-choose-grace")
    page.click("button:has-text('Roll key')")
    new_secret = page.text_content("[data-testid=new-secret]").strip()
    assert new_secret.startswith("gwk_") and new_secret != created.secret
    assert "The old secret keeps working until" in page.text_content(".secret-panel")
    shoot(page, "13-rolled-secret-once")
    rolled_at = timezone.now()

    assert api_get(live_server, new_secret).status_code == 200
    assert api_get(live_server, created.secret).status_code == 200
    page.goto("/integrations/api/")
    assert new_secret not in page.content()
    row = page.locator("tr", has_text="Billing sync")
    assert "Rolling: old secret stops" in row.text_content()
    shoot(page, "14-keys-rolling")
    row.locator("a:has-text('Billing sync')").click()
    assert "Key rolled" in page.text_content("section:has-text('History')")
    shoot(page, "15-key-page")

    with time_machine.travel(rolled_at + timedelta(hours=1, seconds=1)):
        stopped = api_get(live_server, created.secret)
        assert stopped.status_code == 401 and stopped.json()["error"] == "expired-key"
        assert api_get(live_server, new_secret).status_code == 200
