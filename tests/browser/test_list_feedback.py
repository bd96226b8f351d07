"""What the key list and Settings show as one acts: "Revoke selected…" only once a key is
ticked, a visible note after a revoke in place, and a time-zone search whose matches show."""

import pytest
from playwright.sync_api import expect

from tests.browser.test_dashboard import sign_in
from tests.factories import make_key, owner_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_bulk_button_waits_for_a_tick_and_a_revoke_says_so_on_screen(page, live_server):
    owner = owner_of(email="owner@acme.test")
    make_key(user=owner, name="First")
    make_key(user=owner, name="Second")
    sign_in(page, "owner@acme.test")
    bulk = page.locator("button.bulk-revoke")
    expect(bulk).to_be_hidden()
    page.locator("tr", has_text="First").locator("input[name=keys]").check()
    expect(bulk).to_have_text("Revoke the selected key…")
    page.locator("tr", has_text="Second").locator("input[name=keys]").check()
    expect(bulk).to_have_text("Revoke 2 selected keys…")
    page.locator("tr", has_text="First").locator("input[name=keys]").uncheck()
    page.locator("tr", has_text="Second").locator("input[name=keys]").uncheck()
    expect(bulk).to_be_hidden()
    menu = page.locator("summary[aria-label='Actions for First']")
    menu.click()
    expect(page.get_by_role("button", name="Revoke First")).to_be_visible()
    page.keyboard.press("Escape")  # closes the menu, focus back on its button
    expect(page.get_by_role("button", name="Revoke First")).to_be_hidden()
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Actions for First"
    menu.click()
    page.get_by_role("button", name="Revoke First").click()
    page.locator("dialog#confirm-dialog").get_by_role("button", name="Revoke key").click()
    expect(page.locator("main .flashes .flash--success")).to_contain_text("Revoked “First”")


def test_a_time_zone_search_shows_its_matches_not_only_the_zone_chosen(page, live_server):
    owner_of(email="owner@acme.test")
    sign_in(page, "owner@acme.test")
    page.goto("/settings/")
    page.fill("input.tz-search", "berlin")
    select = page.locator("select[name=timezone]")
    assert select.evaluate("s => s.size") >= 2  # an open list of the matches
    expect(select.locator("option:visible", has_text="Berlin")).to_have_count(1)
    page.fill("input.tz-search", "")
    assert select.evaluate("s => s.size") == 0
