"""A service account has no sign-in of any kind (docs/product.md §12): not the dashboard's
password or code, not a session however made, so neither /device nor Connect."""

import pytest
from django.test import Client as Browser

from apps.audit.services import Actor
from apps.service_accounts.services import service_account_create
from tests.oauth.helpers import authorize_url, pkce, register

pytestmark = pytest.mark.django_db
PASSWORD = "a long and good password 42"


@pytest.fixture
def account(workspace, owner):
    return service_account_create(workspace=workspace, name="CI deploy", actor=Actor.of_user(owner))


def test_even_with_a_password_set_behind_our_back_it_cannot_sign_in(account):
    account.user.set_password(PASSWORD)
    account.user.save()
    browser = Browser()
    answer = browser.post(
        "/account/login/", {"login": account.user.email, "password": PASSWORD}, follow=True
    )
    assert "_auth_user_id" not in browser.session
    assert "A service account has no sign-in" in answer.content.decode()
    assert browser.get("/integrations/api/").status_code == 302


@pytest.mark.parametrize("path", ["/integrations/api/", "/device", "/settings/team/"])
def test_a_session_made_for_it_is_not_honoured(account, path):
    browser = Browser()
    browser.force_login(account.user)
    answer = browser.get(path)
    assert answer.status_code == 302 and "/sign-in/" in answer["Location"]


def test_connect_sends_it_to_sign_in_like_a_stranger(account):
    browser = Browser()
    registered = register(browser)
    browser.force_login(account.user)
    answer = browser.get(authorize_url(registered["client_id"], pkce()[1]))
    assert answer.status_code == 302 and "/sign-in/" in answer["Location"]
