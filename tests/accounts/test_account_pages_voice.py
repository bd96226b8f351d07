"""The account pages django-allauth draws speak as every other page does, and a reset always
leads back to signing in."""

import re

import pytest

pytestmark = pytest.mark.django_db


def text_of(response) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())


def test_the_e_mail_page_speaks_in_sentence_case(client, owner):
    page = text_of(client.get("/account/email/"))
    assert "Make primary" in page and "Send the confirmation again" in page
    assert "Make Primary" not in page and "Re-send Verification" not in page
    assert "Confirmed" in page and "associated with your account" not in page


def test_asking_for_a_reset_names_no_unlinked_contact_and_leads_back_to_sign_in(client):
    form = text_of(client.get("/account/password/reset/"))
    assert "E-mail me a reset link" in form and "Reset My Password" not in form
    sent = client.get("/account/password/reset/done/").content.decode()
    assert "contact us" not in sent
    assert 'href="/sign-in/"' in sent and 'href="/account/password/reset/"' in sent


def test_after_a_reset_the_page_offers_to_sign_in(client):
    done = client.get("/account/password/reset/key/done/").content.decode()
    assert "Password changed" in done and 'href="/sign-in/"' in done


def test_the_new_password_fields_are_labelled_in_sentence_case(client, owner):
    page = text_of(client.get("/account/password/change/"))
    assert "New password, again" in page and "New Password (again)" not in page
