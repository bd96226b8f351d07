"""The create form's keyboard: Enter creates the key."""

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

