"""The dashboard on a phone (390 px): a one-line header, the navigation and the workspace
switcher in a menu."""

import pytest
from playwright.sync_api import expect

from tests.browser.test_dashboard import sign_in
from tests.factories import MembershipFactory, WorkspaceFactory, make_key, owner_of

pytestmark = pytest.mark.django_db(transaction=True)

ONE_LINE = "el => el.getBoundingClientRect().height"


def test_a_phone_gets_a_one_line_header_and_a_menu(browser, live_server, shoot):
    older, newer = WorkspaceFactory(name="Older Academy"), WorkspaceFactory(name="Newer Shop")
    user = owner_of(older, email="a.rather.long.owner.address@acme.test")
    MembershipFactory(workspace=newer, user=user, role="admin")
    make_key(user=user, workspace=newer, name="Newer key")
    context = browser.new_context(base_url=live_server.url, viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        sign_in(page, user.email)
        header = page.locator("header.topbar")
        assert header.evaluate(ONE_LINE) < 56  # one line: not the brand over two
        assert page.locator(".brand").evaluate(ONE_LINE) < 30
        expect(page.locator("nav.sidenav")).to_be_hidden()
        menu = page.get_by_role("button", name="Menu")
        expect(menu).to_have_attribute("aria-expanded", "false")
        menu.click()
        expect(menu).to_have_attribute("aria-expanded", "true")
        nav = page.locator("nav.sidenav")
        expect(nav.get_by_role("link", name="Audit", exact=True)).to_be_visible()
        # One link a row, not three rows of pills.
        lefts = nav.locator("a").evaluate_all(
            "links => links.map(link => Math.round(link.getBoundingClientRect().left))"
        )
        assert len(set(lefts)) == 1, lefts
        shoot(page, "phone-menu")
        nav.get_by_role("button", name="Newer Shop").click()
        page.wait_for_url("**/integrations/api/")
        expect(page.locator(".flashes")).to_contain_text("Switched to Newer Shop")
        expect(page.locator("tr", has_text="Newer key")).to_have_count(1)
    finally:
        context.close()


def test_without_javascript_a_phone_shows_the_navigation_and_the_workspace(browser, live_server):
    owner_of(WorkspaceFactory(name="Acme Academy"), email="owner@acme.test")
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": 390, "height": 844}, java_script_enabled=False
    )
    page = context.new_page()
    try:
        sign_in(page, "owner@acme.test")
        assert page.locator("header.topbar").evaluate(ONE_LINE) < 56
        audit = page.locator("nav.sidenav").get_by_role("link", name="Audit", exact=True)
        expect(audit).to_be_visible()
        expect(page.locator("nav.sidenav")).to_contain_text("Acme Academy")
        expect(page.get_by_role("button", name="Menu")).to_be_hidden()
    finally:
        context.close()
