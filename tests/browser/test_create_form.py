"""The create form's keyboard and its pickers: Enter creates the key; an object ticked under
"All" is never silently dropped."""

import pytest
from playwright.sync_api import expect

from apps.api_keys.models import ApiKey
from tests.browser.test_dashboard import sign_in
from tests.factories import owner_of

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("scripts", [True, False], ids=["js", "no-js"])
def test_enter_in_the_name_field_creates_the_key(browser, live_server, scripts):
    owner_of(email="owner@acme.test")
    context = browser.new_context(base_url=live_server.url, java_script_enabled=scripts)
    page = context.new_page()
    try:
        sign_in(page, "owner@acme.test")
        page.goto("/integrations/api/new/")
        page.click("label.segment:has(input[name=access_communities][value=read])")
        page.fill("input[name=name]", "Zapier sync")
        page.press("input[name=name]", "Enter")
        expect(page.locator("[data-testid=new-secret]")).to_contain_text("gwk_")
        # The key chosen by hand, not a shortcut's "Read: all resources".
        key = ApiKey.objects.get()
        assert (key.name, key.scopes) == ("Zapier sync", ["communities:read"])
    finally:
        context.close()


def test_a_page_ticked_under_all_pages_is_never_silently_ignored(browser, live_server):
    """With scripts, the picker hides under "All pages" and nothing ticked there is sent; without
    them, a tick under "All pages" is refused beside the group."""
    from apps.pages.models import Page

    owner = owner_of(email="owner@acme.test")
    workspace = owner.memberships.get().workspace
    spring, autumn = (
        Page.objects.create(workspace=workspace, title=title, slug=slug)
        for title, slug in (("Spring course", "spring"), ("Autumn course", "autumn"))
    )
    for scripts in (False, True):
        context = browser.new_context(base_url=live_server.url, java_script_enabled=scripts)
        page = context.new_page()
        try:
            sign_in(page, "owner@acme.test")
            page.goto("/integrations/api/new/")
            page.click("label.segment:has(input[name=access_pages][value=read])")
            page.click("summary:has-text('Restrictions')")
            group = page.locator(".restriction-group[data-group=pages]")
            spring_box = group.get_by_label("Spring course")
            if not scripts:
                spring_box.check()  # under "All pages", the default
                page.fill("input[name=name]", "Tick under all")
                page.click("button.btn-primary:has-text('Create key')")
                expect(group.locator(".error")).to_contain_text(
                    "You ticked 1 page under “All pages”"
                )
                assert not ApiKey.objects.exists()
                continue
            expect(spring_box).to_be_hidden()
            group.get_by_text("Only these").click()
            spring_box.check()
            group.get_by_text("All pages").click()  # changed her mind: all pages after all
            expect(spring_box).to_be_hidden()
            group.get_by_text("Only these").click()
            expect(spring_box).to_be_checked()  # her tick is still there
            page.fill("input[name=name]", "Spring only")
            page.click("button.btn-primary:has-text('Create key')")
            expect(page.locator("[data-testid=new-secret]")).to_contain_text("gwk_")
        finally:
            context.close()
    key = ApiKey.objects.get()
    assert key.restrictions.chosen["pages"] == (spring.pk,)
    assert autumn.pk not in key.restrictions.chosen["pages"]
