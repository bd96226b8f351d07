"""The CLI login and an app's Connect never make a key wait (docs/product.md §10): under the
approval policy, their pages offer a non-owner only what the policy does not cover, say why,
and refuse anything more."""

import re

import pytest

from apps.api_keys.models import ApiKey
from tests.client import Client
from tests.devices.test_device_grant import approve as approve_login
from tests.devices.test_device_grant import poll, start
from tests.factories import MembershipFactory, UserFactory, WorkspaceFactory
from tests.oauth.helpers import authorize_url, pkce, register

pytestmark = pytest.mark.django_db


def offered(page: str) -> set[str]:
    return set(re.findall(r'name="scopes" value="([a-z:]+)"', page))


def person(workspace, role):
    user = UserFactory(email=f"{role}@acme.test")
    MembershipFactory(workspace=workspace, user=user, role=role)
    browser = Client()
    browser.force_login(user)
    return browser


@pytest.fixture
def acme():
    return WorkspaceFactory(name="Acme", key_approval="write")


def test_an_admins_cli_login_is_offered_read_scopes_only_and_told_why(client, acme):
    admin = person(acme, "admin")
    body = start(client, scope="products:read pages:read pages:write").json()
    page = admin.get(f"/device?user_code={body['user_code']}").content.decode()
    assert offered(page) == {"products:read", "pages:read"}
    assert 'data-testid="approval-policy"' in page
    assert "offers read access only" in page
    # Asking for more by hand is refused; read scopes log in at once.
    refused = approve_login(admin, body["user_code"], acme, scopes=("pages:write",))
    assert refused.status_code == 400
    assert approve_login(admin, body["user_code"], acme, scopes=("pages:read",)).status_code == 200
    token = poll(client, body["device_code"])
    assert token.status_code == 200, token.content
    key = ApiKey.objects.get(tag="cli")
    assert (key.scopes, key.state) == (["pages:read"], "active")


def test_an_owners_cli_login_is_offered_everything_asked(client, acme):
    owner = person(acme, "owner")
    body = start(client, scope="products:read pages:read pages:write").json()
    page = owner.get(f"/device?user_code={body['user_code']}").content.decode()
    assert offered(page) == {"products:read", "pages:read", "pages:write"}
    assert 'data-testid="approval-policy"' not in page


def test_under_all_an_admins_cli_login_offers_nothing_and_only_deny(client):
    acme = WorkspaceFactory(name="Acme", key_approval="all")
    admin = person(acme, "admin")
    body = start(client, scope="pages:read").json()
    page = admin.get(f"/device?user_code={body['user_code']}").content.decode()
    assert offered(page) == set()
    assert 'value="approve"' not in page
    assert "create a key on the API keys page" in page


def test_an_admins_connect_is_offered_read_scopes_only_and_told_why(client, acme):
    admin = person(acme, "admin")
    client_id = register(client)["client_id"]
    _, challenge = pkce()
    url = authorize_url(client_id, challenge)  # asks products:read pages:read pages:write
    page = admin.get(url).content.decode()
    assert offered(page) == {"products:read", "pages:read"}
    assert "offers read access only" in page
    widened = admin.post(
        url, {"decision": "approve", "workspace": str(acme.pk), "scopes": ["pages:write"]}
    )
    assert widened.status_code == 400
    assert not ApiKey.objects.exists()


def test_under_all_an_admins_connect_shows_why_and_only_cancel(client):
    acme = WorkspaceFactory(name="Acme", key_approval="all")
    admin = person(acme, "admin")
    client_id = register(client)["client_id"]
    _, challenge = pkce()
    page = admin.get(authorize_url(client_id, challenge))
    assert page.status_code == 403
    text = page.content.decode()
    assert "create a key on the API keys page" in text
    assert 'value="approve"' not in text


def two_places():
    """An admin of First (which asks approval of every key) who owns Second (which asks none)."""
    first = WorkspaceFactory(name="First", key_approval="all")
    second = WorkspaceFactory(name="Second", key_approval="off")
    user = UserFactory(email="both@acme.test")
    MembershipFactory(workspace=first, user=user, role="admin")
    MembershipFactory(workspace=second, user=user, role="owner")
    browser = Client()
    browser.force_login(user)
    return browser, first, second


def test_the_cli_login_offers_what_the_chosen_workspace_allows(client):
    browser, first, second = two_places()
    body = start(client, scope="pages:read pages:write").json()
    code = body["user_code"]
    page = browser.get(f"/device?user_code={code}").content.decode()
    assert offered(page) == set() and 'value="approve"' not in page
    assert 'name="workspace"' in page and "Switch" in page
    switched = browser.get(f"/device?user_code={code}&workspace={second.pk}").content.decode()
    assert offered(switched) == {"pages:read", "pages:write"}
    assert 'value="approve"' in switched and 'data-testid="approval-policy"' not in switched
    assert approve_login(browser, code, second, scopes=("pages:write",)).status_code == 200


def test_the_connect_page_keeps_the_workspace_switch_when_the_first_is_closed(client):
    browser, first, second = two_places()
    client_id = register(client)["client_id"]
    _, challenge = pkce()
    url = authorize_url(client_id, challenge)
    closed = browser.get(url)
    assert closed.status_code == 403
    assert 'id="workspace-switch"' in closed.content.decode()
    opened = browser.get(url + f"&workspace={second.pk}").content.decode()
    assert offered(opened) == {"products:read", "pages:read", "pages:write"}
