"""Passkeys end to end in Chromium, on its virtual authenticator (WebAuthn over CDP): one is
registered on the two-factor page, then signs the person in, both as a second factor after the
password and on its own from the sign-in page."""

import pytest
from allauth.mfa.models import Authenticator

from tests.browser.test_dashboard import sign_in
from tests.factories import PASSWORD, owner_of

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def authenticator(page):
    """A platform authenticator that holds resident keys and verifies its user at once."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    added = cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )
    yield cdp, added["authenticatorId"]


def sign_out(page) -> None:
    page.context.clear_cookies()


def test_a_passkey_is_registered_and_then_signs_the_owner_in(
    page, live_server, settings, authenticator, shoot
):
    settings.MFA_WEBAUTHN_ALLOW_INSECURE_ORIGIN = True  # the live server speaks plain http
    cdp, authenticator_id = authenticator
    owner = owner_of(email="owner@acme.test")
    sign_in(page, "owner@acme.test")

    page.goto("/account/2fa/webauthn/add/")
    if "/reauthenticate/" in page.url:  # allauth asks for the password again first
        page.fill("input[name=password]", PASSWORD)
        page.click("main button[type=submit]")
        page.wait_for_url("**/webauthn/add/")
    page.fill("input[name=name]", "Laptop")
    passwordless = page.locator("input[name=passwordless]")
    if passwordless.count():
        passwordless.check()
    shoot(page, "60-passkey-add")
    page.click("#mfa_webauthn_add")
    page.wait_for_url(lambda url: "/webauthn/add/" not in url)
    assert Authenticator.objects.filter(user=owner, type=Authenticator.Type.WEBAUTHN).exists()
    credentials = cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator_id})
    assert len(credentials["credentials"]) == 1

    # A second factor after the password.
    sign_out(page)
    page.goto("/sign-in/")
    page.fill("input[name=login]", "owner@acme.test")
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_url("**/2fa/authenticate/")
    shoot(page, "61-passkey-second-factor")
    page.click("button:has-text('Use a passkey')")
    page.wait_for_url("**/integrations/api/")

    # On its own: no password at all.
    sign_out(page)
    page.goto("/sign-in/")
    page.click("#passkey_login")
    page.wait_for_url("**/integrations/api/")
    assert page.locator("text=owner@acme.test").count() >= 1
