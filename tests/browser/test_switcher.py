import pytest
from playwright.sync_api import expect

from tests.browser.test_dashboard import sign_in
from tests.factories import MembershipFactory, WorkspaceFactory, make_key, owner_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_header_switches_between_two_workspaces(page, live_server, shoot):
    older, newer = WorkspaceFactory(name="Older Academy"), WorkspaceFactory(name="Newer Shop")
    user = owner_of(older, email="owner@acme.test")
    MembershipFactory(workspace=newer, user=user, role="admin")
    make_key(user=user, workspace=older, name="Older key")
    make_key(user=user, workspace=newer, name="Newer key")
    sign_in(page, "owner@acme.test")
    assert page.locator("tr", has_text="Older key").count() == 1
    assert page.locator("tr", has_text="Newer key").count() == 0

    page.click("summary:has-text('Older Academy')")
    shoot(page, "50-workspace-switcher")
    page.click("button:has-text('Newer Shop')")
    page.wait_for_url("**/integrations/api/")
    assert "Switched to Newer Shop" in page.text_content(".flashes")
    assert page.locator("tr", has_text="Newer key").count() == 1
    assert page.locator("tr", has_text="Older key").count() == 0
    # An admin there: no Settings in the navigation, and the audit log is Newer Shop's.
    assert page.locator("nav.sidenav a", has_text="Settings").count() == 0
    page.click('nav >> text="Audit"')  # not Audit streaming
    # A click does not wait for the page it opens: wait for it (seen once through PgBouncer).
    page.wait_for_url("**/audit/")
    expect(page.locator("summary", has_text="Newer Shop")).to_have_count(1)
