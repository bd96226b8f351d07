"""Single sign-on in Chromium, all the way: our sign-in page, the provider's own login page
(npm's oidc-provider, run by the test), back to the keys; then the owner's settings page at
both widths."""

import pytest

from tests.sso.test_oidc import ada, owner, provider, sso, workspace  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_teammate_signs_in_through_the_provider_from_the_sign_in_page(page, sso, ada, shoot):  # noqa: F811
    page.goto("/sign-in/")
    page.get_by_test_id("sso-link").click()
    page.fill("input[name=email]", "ada@acme.com")
    page.get_by_role("button", name="Continue").click()
    page.get_by_role("link", name="Acme: sign in at").click()
    # The provider's own page: any login name is an account there.
    page.fill("input[name=login]", "ada@acme.com")
    page.fill("input[name=password]", "anything")
    page.get_by_role("button", name="Sign-in").click()
    page.wait_for_url("**/integrations/api/")
    assert "ada@acme.com" in page.content()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_settings_page_shows_what_the_provider_needs(page, sso, owner, shoot, width):  # noqa: F811
    from tests.browser.test_dashboard import sign_in

    page.set_viewport_size({"width": width, "height": 900})
    sign_in(page, "olga@acme.com")
    page.goto("/settings/single-sign-on/")
    assert page.get_by_test_id("sso-redirect-uri").inner_text().endswith("/sso/callback")
    assert page.locator("input[value=required]").is_disabled()  # no test sign-in yet
    scroll = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert scroll <= 0
    shoot(page, f"{'desktop' if width == 1280 else 'phone'}-single-sign-on")
