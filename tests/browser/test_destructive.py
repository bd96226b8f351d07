"""Removing people: the in-page dialog with JavaScript, a confirmation page without it."""

import pytest

from apps.communities.models import CommunityMembership
from apps.workspaces.models import Membership
from tests.browser.test_dashboard import sign_in
from tests.factories import MembershipFactory, make_community, member_of, owner_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_removing_a_community_member_asks_in_a_dialog(page, live_server):
    owner = owner_of(email="owner@acme.test")
    community = make_community(owner.memberships.get().workspace, "Makers")
    member_of(community, email="maker@example.com")
    sign_in(page, "owner@acme.test")
    page.goto(f"/communities/{community.pk}/")
    page.get_by_role("button", name="Remove maker@example.com").click()
    dialog = page.locator("dialog#confirm-dialog")
    assert "Remove maker@example.com from Makers?" in dialog.text_content()
    dialog.get_by_role("button", name="Remove member").click()
    page.wait_for_url(f"**/communities/{community.pk}/")
    assert "Removed maker@example.com" in page.text_content(".flashes")
    assert not CommunityMembership.objects.exists()


@pytest.fixture
def no_js_page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


def test_without_javascript_removals_go_through_a_confirmation_page(no_js_page, shoot):
    page = no_js_page
    workspace_owner = owner_of(email="owner@acme.test")
    workspace = workspace_owner.memberships.get().workspace
    admin = MembershipFactory(workspace=workspace, role="admin", user__email="ada@acme.test")
    community = make_community(workspace, "Makers")
    member_of(community, email="maker@example.com")
    sign_in(page, "owner@acme.test")

    page.goto("/settings/team/")
    page.get_by_role("link", name="Remove ada@acme.test").click()
    assert page.text_content("h1") == "Remove ada@acme.test from the team?"
    assert "None of their keys made a request in the last 30 days" in page.text_content("main")
    assert Membership.objects.filter(pk=admin.pk).exists()  # nothing happened yet
    shoot(page, "33-remove-teammate-no-js")
    page.get_by_role("button", name="Remove from the team").click()
    assert "Removed ada@acme.test" in page.text_content(".flashes")
    assert not Membership.objects.filter(pk=admin.pk).exists()

    page.goto(f"/communities/{community.pk}/")
    page.get_by_role("button", name="Remove maker@example.com").click()
    assert CommunityMembership.objects.exists()
    page.click("text=Cancel")
    assert CommunityMembership.objects.exists()
    page.get_by_role("button", name="Remove maker@example.com").click()
    page.get_by_role("button", name="Remove member").click()
    assert not CommunityMembership.objects.exists()
