"""The password reset pages in the house's words (issue 54, item 17): a way back to sign in,
no "Please contact us" naming no contact, one "Password changed" after the reset, and an
e-mail that says e-mail."""

import re

import pytest
from django.core import mail

from tests.factories import owner_of

pytestmark = pytest.mark.django_db


def test_the_reset_page_the_mail_and_the_done_page_read_as_the_house_speaks(client):
    owner_of(email="owner@acme.test")
    page = client.get("/account/password/reset/").content.decode()
    assert "Please contact us" not in page
    assert '<a href="/sign-in/">← back to sign in</a>' in page
    answer = client.post("/account/password/reset/", {"email": "owner@acme.test"})
    assert answer.status_code == 302
    [sent] = mail.outbox
    assert sent.subject == "Gatehouse: Choose a new password"
    assert " email" not in sent.body.lower().replace("e-mail", "")
    link = re.search(r"https?://[^/\s]+(/account/password/reset/key/\S+)", sent.body)[1]
    form = client.get(link, follow=True)
    action = form.redirect_chain[-1][0] if form.redirect_chain else link
    done = client.post(
        action,
        {"password1": "a new long passphrase 42", "password2": "a new long passphrase 42"},
        follow=True,
    )
    text = done.content.decode()
    assert "<h1>Password changed</h1>" in text
    assert "Password successfully changed" not in text
