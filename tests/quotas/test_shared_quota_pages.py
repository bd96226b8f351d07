"""The shared quota on the pages (quotaShared, docs/product.md §17): set and ended on the service
account's page, read there and on its keys' rows and pages, and given to a key made on the
create page; through Django's client (Chromium walks the same pages in tests/browser)."""

import re

import pytest

from apps.api_keys.models import ApiKey
from apps.audit.models import AuditEvent
from apps.audit.services import Actor
from apps.common.quota_periods import Quota
from apps.service_accounts.services import service_account_create
from tests.conftest import auth
from tests.factories import make_key

pytestmark = pytest.mark.django_db
LIST = "/settings/team/service-accounts/"


@pytest.fixture
def account(workspace, owner):
    return service_account_create(workspace=workspace, name="CI deploy", actor=Actor.of_user(owner))


def test_an_owner_shares_a_quota_on_the_account_page_and_its_keys_show_it(
    client, account, workspace
):
    key = make_key(user=account.user, workspace=workspace, scopes=["pages:read"], name="Deploys")
    page = f"{LIST}{account.pk}/"
    assert "None shared" in client.get(page).content.decode()
    saved = client.post(page, {"shared_quota": "1,000 / week"})
    assert saved.status_code == 302
    shown = client.get(page).content.decode()
    assert "Every key of CI deploy now draws from 1,000 requests a week." in shown
    assert "Shared by all its keys, 1,000 requests a week: 0 used" in shown
    assert 'value="1000/week"' in shown  # the form reads it back as people write it
    key.key.refresh_from_db()
    assert key.key.quota == Quota(1000, "week") and key.key.quota_shared
    listed = client.get("/integrations/api/").content.decode()
    assert "0 of 1,000 this week, shared" in listed
    detail = client.get(f"/integrations/api/keys/{key.key.pk}/").content.decode()
    assert "Shared by every key of CI deploy" in detail
    client.post(page, {"shared_quota": ""})
    key.key.refresh_from_db()
    assert key.key.quota == Quota(1000, "week") and not key.key.quota_shared
    assert "Its keys no longer share a quota" in client.get(page).content.decode()
    assert AuditEvent.objects.filter(action="service_account.updated").count() == 2


def test_a_bad_shared_quota_is_refused_in_words_and_nothing_changes(client, account):
    page = f"{LIST}{account.pk}/"
    refused = client.post(page, {"shared_quota": "lots"})
    assert refused.status_code == 200
    assert "Give the quota as requests/period" in refused.content.decode()
    account.refresh_from_db()
    assert account.shared_quota is None


def test_an_admin_cannot_share_a_quota(client, account, admin):
    client.force_login(admin)
    assert client.post(f"{LIST}{account.pk}/", {"shared_quota": "5/day"}).status_code == 403
    account.refresh_from_db()
    assert account.shared_quota is None


def test_a_key_made_on_the_create_page_draws_from_the_shared_quota(client, account, owner):
    client.post(f"{LIST}{account.pk}/", {"shared_quota": "2/never"})
    form = client.get(f"/integrations/api/new/?service_account={account.pk}").content.decode()
    assert "draws from CI deploy's one allowance of 2 requests in all" in form
    assert 'name="quota_requests"' not in form  # no quota of its own to ask for
    token = re.search(r'name="form_token" value="([^"]+)"', form).group(1)
    created = client.post(
        "/integrations/api/new/",
        {
            "service_account": account.pk,
            "form_token": token,
            "name": "Pooled",
            "scopes": ["pages:read"],
            "expiry": "30",
        },
    )
    secret = re.search(r'data-testid="new-secret">([^<]+)<', created.content.decode()).group(1)
    key = ApiKey.objects.get(name="Pooled")
    assert key.quota == Quota(2, "never") and key.quota_shared
    answers = [client.get("/api/v1/workspace", **auth(secret)).status_code for _ in range(3)]
    assert answers == [200, 200, 429]
