"""The user code a person types on /device: punctuation and spaces of any kind are ignored
(RFC 8628 §6.1), so what a terminal, a phone or a word processor made of the dash still works;
anything that is not the code's letters is refused."""

import pytest

from tests.client import Client
from tests.devices.test_device_grant import start
from tests.factories import WorkspaceFactory, owner_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def code(client) -> str:
    return start(client).json()["user_code"]  # shown WDJB-MJHT


@pytest.fixture
def browser():
    signed_in = Client()
    signed_in.force_login(owner_of(WorkspaceFactory(name="Acme")))
    return signed_in


@pytest.mark.parametrize(
    "separator",
    ["-", ".", "\u2013", "\u2014", "\u2010", "\u2212", "_", " ", "\u00a0", " - ", "/", ""],
    ids=repr,
)
def test_any_punctuation_between_the_halves_is_ignored(browser, code, separator):
    typed = code.replace("-", separator)
    page = browser.get("/device", {"user_code": typed})
    assert page.status_code == 200, typed
    assert code in page.content.decode()


def test_full_width_letters_read_as_the_letters_they_show(browser, code):
    typed = "".join(chr(ord(ch) - 0x41 + 0xFF21) if ch.isalpha() else ch for ch in code)
    assert browser.get("/device", {"user_code": typed}).status_code == 200


@pytest.mark.parametrize(
    "mangle", [lambda c: c + "B", lambda c: c[:-1], lambda c: c[:4] + "A" + c[5:]]
)
def test_a_code_with_a_letter_too_many_too_few_or_not_its_own_is_refused(browser, code, mangle):
    page = browser.get("/device", {"user_code": mangle(code)})
    assert page.status_code == 400
    assert "not valid or has expired" in page.content.decode()


def test_a_control_character_is_not_ignored(browser, code):
    assert browser.get("/device", {"user_code": code.replace("-", "\x00")}).status_code == 400
