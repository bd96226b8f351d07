"""The e-mailed sign-in code is the way in for a new browser while strangers hold the account's
ceiling of failed passwords, so nobody else can spend it: code requests are limited per
account *and* address (an IPv6 /64 counting as one), never per account from anywhere, and a
code asked for in one browser is never replaced by a request made in another."""

import re

import pytest
from django.core import mail

from tests.client import Client
from tests.factories import owner_of

pytestmark = pytest.mark.django_db
EMAIL = "owner@example.com"
CODE_URL = "/account/login/code/"


@pytest.fixture(autouse=True)
def _owner(settings):
    settings.TRUSTED_PROXY_COUNT = 1
    owner_of(email=EMAIL)


def ask(browser, address):
    return browser.post(CODE_URL, {"email": EMAIL}, HTTP_X_FORWARDED_FOR=address)


def sign_in_with_the_code(browser, asked, address) -> None:
    """Confirm the code of the last e-mail; the browser is then signed in."""
    assert asked.status_code == 302, asked.content.decode()[:500]
    body = mail.outbox[-1].body
    code = re.search(r"^([A-Z0-9]{4}-[A-Z0-9]{4})$", body, re.MULTILINE).group(1)
    confirmed = browser.post(asked["Location"], {"code": code}, HTTP_X_FORWARDED_FOR=address)
    assert confirmed.status_code == 302
    assert browser.get("/integrations/api/").status_code == 200


def test_a_stranger_asking_every_twenty_seconds_does_not_spend_the_owners_codes():
    for _ in range(3):
        assert ask(Client(), "198.51.100.66").status_code == 302
    refused = ask(Client(), "198.51.100.66")
    assert refused.status_code == 200
    assert "Too many sign-in codes asked for" in refused.content.decode()
    laptop = Client()
    sign_in_with_the_code(laptop, ask(laptop, "192.0.2.1"), "192.0.2.1")


def test_strangers_at_many_addresses_do_not_spend_them_either():
    for n in range(20):
        for _ in range(3):
            ask(Client(), f"198.51.100.{n}")
    laptop = Client()
    sign_in_with_the_code(laptop, ask(laptop, "192.0.2.1"), "192.0.2.1")


def test_addresses_of_one_ipv6_network_share_one_limit():
    for n in range(3):
        assert ask(Client(), f"2001:db8:1:2::{n + 1}").status_code == 302
    refused = ask(Client(), "2001:db8:1:2::ffff")
    assert "Too many sign-in codes asked for" in refused.content.decode()
    laptop = Client()
    sign_in_with_the_code(laptop, ask(laptop, "2001:db8:9:9::1"), "2001:db8:9:9::1")


def test_a_code_asked_for_elsewhere_afterwards_does_not_replace_the_owners():
    laptop = Client()
    asked = ask(laptop, "192.0.2.1")
    owners_mail = mail.outbox[-1]
    assert ask(Client(), "198.51.100.66").status_code == 302  # a second code, in another browser
    mail.outbox.append(owners_mail)  # the owner types the code of their own request
    sign_in_with_the_code(laptop, asked, "192.0.2.1")
