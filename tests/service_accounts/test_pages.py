"""Team → Service accounts, the Remove page's hand-over, a demotion's, and the key pages for a
service account's key, through Django's client (Chromium drives the same in tests/browser)."""

import re

import pytest
from django.core.exceptions import PermissionDenied  # noqa: F401 - documents the 403s below

from apps.api_keys.models import ApiKey
from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.metering.buffer import usage_flush
from apps.request_log.models import RequestLogEntry
from apps.service_accounts.services import service_account_create
from apps.workspaces.models import Membership, ServiceAccount
from tests.conftest import auth
from tests.factories import make_key

pytestmark = pytest.mark.django_db
LIST = "/settings/team/service-accounts/"


@pytest.fixture
def account(workspace, owner):
    return service_account_create(workspace=workspace, name="CI deploy", actor=Actor.of_user(owner))


def test_an_owner_makes_one_on_the_page_and_lands_on_it(client, owner):
    empty = client.get(LIST)
    assert "No service accounts yet" in empty.content.decode()
    made = client.post(LIST, {"name": "Zapier", "description": "Looked after by Ops"})
    account = ServiceAccount.objects.get(name="Zapier")
    assert made.status_code == 302 and made["Location"] == f"{LIST}{account.pk}/"
    page = client.get(made["Location"]).content.decode()
    assert "Make its first key" in page and "Looked after by Ops" in page


def test_a_blank_name_is_refused_on_the_form(client, owner):
    answer = client.post(LIST, {"name": "   "})
    assert answer.status_code == 200 and not ServiceAccount.objects.exists()


def test_admins_see_service_accounts_but_cannot_make_or_delete_them(client, account, admin):
    client.force_login(admin)
    listed = client.get(LIST).content.decode()
    assert "CI deploy" in listed and "New service account" not in listed
    assert client.post(LIST, {"name": "Mine"}).status_code == 403
    assert client.post(f"{LIST}{account.pk}/delete/").status_code == 403
    assert client.get(f"/integrations/api/new/?service_account={account.pk}").status_code == 403


def test_the_team_list_shows_people_only(client, account):
    page = client.get("/settings/team/").content.decode()
    assert "owner@acme.test" in page and account.user.email not in page


def test_an_owner_makes_its_key_on_the_create_page_and_sees_the_secret_once(
    client, owner, workspace, account
):
    workspace.key_approval = "all"
    workspace.save()
    form = client.get(f"/integrations/api/new/?service_account={account.pk}").content.decode()
    assert "belongs to the service account" in form
    token = re.search(r'name="form_token" value="([^"]+)"', form).group(1)
    created = client.post(
        "/integrations/api/new/",
        {
            "service_account": account.pk,
            "form_token": token,
            "name": "Deploys",
            "scopes": ["pages:read"],
            "expiry": "30",
        },
    )
    assert created.status_code == 200, created.content.decode()[:2000]
    secret = re.search(r'data-testid="new-secret">([^<]+)<', created.content.decode()).group(1)
    key = ApiKey.objects.get(name="Deploys")
    assert key.user_id == account.user_id and key.state == "active"
    assert client.get("/api/v1/workspace", **auth(secret)).json()["userEmail"] == account.user.email
    listed = client.get("/integrations/api/").content.decode()
    assert "Service account</span> <span" in listed


def test_deleting_it_on_its_page_revokes_its_keys(client, owner, account):
    from apps.service_accounts.services import service_account_key_create

    made = service_account_key_create(
        account=account,
        name="Deploys",
        scopes=["pages:read"],
        expires_at=None,
        actor=Actor.of_user(owner),
    )
    confirm = client.get(f"{LIST}{account.pk}/delete/")
    assert "Every key of it is revoked" in confirm.content.decode()
    gone = client.post(f"{LIST}{account.pk}/delete/", follow=True)
    assert "1 key revoked" in gone.content.decode()
    assert client.get("/api/v1/workspace", **auth(made.secret)).status_code == 401


def _use(secret, times=3, client=None):
    from tests.client import Client

    caller = client or Client()
    for _ in range(times):
        assert caller.get("/api/v1/workspace", **auth(secret)).status_code == 200
    usage_flush()


def test_the_remove_page_shows_the_keys_in_use_and_hands_one_over(client, owner, admin, account):
    used = make_key(user=admin, scopes=["pages:read"], name="Deploy hook")
    unused = make_key(user=admin, scopes=["pages:read"], name="Forgotten")
    _use(used.secret)
    membership = Membership.objects.get(user=admin)
    page = client.get(f"/settings/team/{membership.pk}/remove/").content.decode()
    assert "Deploy hook" in page and "Forgotten" not in page
    row = page[page.index(f'data-testid="in-use-{used.key.pk}"') :]
    assert 'data-testid="in-use-requests">3<' in row[:3000], "the requests of the last 30 days"
    assert RequestLogEntry.objects.filter(key_id=used.key.pk).count() == 3
    assert "127.0.0.1" in row[:3000], "the addresses, from the request log"
    assert "get_workspace" in row[:3000]

    handed = client.post(
        f"/settings/team/{membership.pk}/hand-over/",
        {"key": used.key.pk, "service_account": account.pk, "grace": "1h"},
    )
    assert handed.status_code == 200
    body = handed.content.decode()
    new_secret = re.search(r'data-testid="new-secret">([^<]+)<', body).group(1)
    assert "Replaces" in body and "Last step: remove admin@acme.test" in body
    assert client.get("/api/v1/workspace", **auth(used.secret)).json()["userEmail"] == (
        account.user.email
    )
    assert client.get("/api/v1/workspace", **auth(new_secret)).status_code == 200
    new_key = ApiKey.objects.get(user=account.user)
    for key in (used.key, new_key):
        detail = client.get(f"/integrations/api/keys/{key.pk}/").content.decode()
        assert "Key handed over to a service account" in detail

    removed = client.post(f"/settings/team/{membership.pk}/remove/")
    assert removed.status_code == 302
    assert ApiKey.objects.get(pk=unused.key.pk).revoked_at is not None
    assert client.get("/api/v1/workspace", **auth(new_secret)).status_code == 200
    assert AuditEvent.objects.filter(action="key.handed_over").count() == 1
    audit = client.get("/audit/").content.decode()
    assert "handed over to the service account CI deploy" in audit


def test_a_hand_over_with_nothing_chosen_is_refused_and_changes_nothing(
    client, owner, admin, account
):
    used = make_key(user=admin, scopes=["pages:read"])
    membership = Membership.objects.get(user=admin)
    answer = client.post(f"/settings/team/{membership.pk}/hand-over/", {"key": used.key.pk})
    assert answer.status_code == 302
    assert ApiKey.objects.get(pk=used.key.pk).revoked_at is None
    # §12: no grace is chosen for the owner; sent without one, nothing happens.
    assert client.get("/api/v1/workspace", **auth(used.secret)).status_code == 200
    usage_flush()  # in use now: the Remove page offers its hand-over
    page = client.get(f"/settings/team/{membership.pk}/remove/").content.decode()
    assert '<option value="" selected disabled>Choose how long…</option>' in page
    assert '<option value="none" selected' not in page
    answer = client.post(
        f"/settings/team/{membership.pk}/hand-over/",
        {"key": used.key.pk, "service_account": account.pk},
    )
    assert answer.status_code == 302
    assert ApiKey.objects.get(pk=used.key.pk).revoked_at is None
    assert not ApiKey.objects.filter(user=account.user).exists()


def test_demoting_an_owner_whose_key_is_in_use_shows_it_first(client, owner, workspace):
    from tests.factories import owner_of

    other = owner_of(workspace, email="other@acme.test")
    used = make_key(user=other, scopes=["pages:read"])
    _use(used.secret, times=1)
    membership = Membership.objects.get(user=other)
    asked = client.post(f"/settings/team/{membership.pk}/", {"role": "admin"})
    assert asked.status_code == 302 and asked["Location"].endswith("remove/?demote=1")
    assert Membership.objects.get(pk=membership.pk).role == "owner"
    page = client.get(asked["Location"]).content.decode()
    assert "an admin?</h1>" in page and "Make admin</button>" in page
    done = client.post(f"/settings/team/{membership.pk}/", {"role": "admin", "confirm": "1"})
    assert done.status_code == 302 and Membership.objects.get(pk=membership.pk).role == "admin"


def test_a_service_account_s_key_names_the_account_not_its_invalid_address(client, owner, account):
    from apps.service_accounts.services import service_account_key_create

    made = service_account_key_create(
        account=account, name="Deploys", scopes=["pages:read"], expires_at=None,
        actor=Actor.of_user(owner),
    )  # fmt: skip
    assert client.get("/api/v1/workspace", **auth(made.secret)).status_code == 200
    usage_flush()
    for page in (f"/integrations/api/keys/{made.key.pk}/", "/usage/"):
        text = client.get(page).content.decode()
        assert "CI deploy" in text, page
        assert ".invalid" not in text, page


def test_the_remove_page_counts_working_and_waiting_keys_apart(client, owner, admin, workspace):
    from apps.workspaces.models import Workspace

    make_key(user=admin, scopes=["pages:read"], name="Works")
    Workspace.objects.filter(pk=workspace.pk).update(key_approval="all")
    waiting = make_key(user=admin, scopes=["pages:read"], name="Waits")
    assert waiting.key.approval_requested_at is not None
    membership = Membership.objects.get(user=admin)
    page = client.get(f"/settings/team/{membership.pk}/remove/").content.decode()
    said = " ".join(page.split())
    assert "is revoked at once: 1 working key now, and 1 waiting for an owner's approval" in said
    assert "2 working keys" not in said


def test_deleting_it_names_its_keys_in_use_with_their_requests_and_last_use(client, owner, account):
    from apps.service_accounts.services import service_account_key_create

    made = service_account_key_create(
        account=account, name="Deploys", scopes=["pages:read"], expires_at=None,
        actor=Actor.of_user(owner),
    )  # fmt: skip
    for _ in range(2):
        assert client.get("/api/v1/workspace", **auth(made.secret)).status_code == 200
    usage_flush()
    confirm = client.get(f"{LIST}{account.pk}/delete/").content.decode()
    said = " ".join(confirm.split())
    assert f"Deploys ({made.key.hint}): 2 requests in 30 days, last used" in said
    page = client.get(f"{LIST}{account.pk}/").content.decode()
    assert f"Deploys ({made.key.hint}): 2 requests in 30 days" in " ".join(page.split())
