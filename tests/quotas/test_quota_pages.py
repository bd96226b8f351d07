"""A key's quota on the key list: "used of allowance this period" and a bar."""

import pytest

from apps.common.quota_periods import Quota
from tests.factories import make_key, owner_of

from .test_quota_api import call

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_key_list_shows_what_a_quota_used_this_period_with_a_bar(client, live_server):
    owner = owner_of()
    made = make_key(user=owner, scopes=["pages:read"], quota=Quota(10_000, "month"), name="Shop")
    make_key(user=owner, scopes=["pages:read"], name="Plain")
    for _ in range(3):
        assert call(live_server, made.secret).status_code == 200
    client.force_login(owner)
    page = client.get("/integrations/api/").content.decode()
    assert "3 of 10,000 this month" in page
    assert page.count('data-testid="quota"') == 1
    assert 'max="10000"' in page and 'value="3"' in page


def test_the_keys_page_shows_used_left_and_the_refill(client, live_server):
    owner = owner_of()
    made = make_key(user=owner, scopes=["pages:read"], quota=Quota(5, "week"), name="Shop")
    plain = make_key(user=owner, scopes=["pages:read"], name="Plain")
    for _ in range(2):
        assert call(live_server, made.secret).status_code == 200
    client.force_login(owner)
    page = client.get(f"/integrations/api/keys/{made.key.pk}/").content.decode()
    assert "5 requests a week: 2 used, <strong>3 left</strong> this week" in page
    assert "Refills to 5" in page
    plain_page = client.get(f"/integrations/api/keys/{plain.key.pk}/").content.decode()
    assert "None: only the rate limit bounds it" in plain_page


def test_the_create_form_gives_a_key_a_quota_and_refuses_a_bad_one_clearly(client):
    from apps.api_keys.models import ApiKey
    from tests.key_pages.test_views import NEW, create

    owner = owner_of()
    client.force_login(owner)
    form = client.get(NEW).content.decode()
    assert 'name="quota_requests"' in form and 'name="quota_period"' in form
    refused = create(client, scopes=["pages:read"], quota_requests="0", quota_period="day")
    assert refused.status_code == 200 and not ApiKey.objects.exists()
    assert "A quota allows at least 1 request." in refused.content.decode()
    created = create(client, scopes=["pages:read"], quota_requests="2500", quota_period="week")
    assert created.status_code == 200
    assert ApiKey.objects.get().quota == Quota(2500, "week")
    assert "0 of 2,500 this week" in client.get("/integrations/api/").content.decode()


def test_an_owner_sets_the_member_key_quota_on_the_settings_page(client):
    from apps.audit.models import AuditEvent
    from tests.workspaces.test_settings_view import form

    owner = owner_of()
    workspace = owner.memberships.get().workspace
    client.force_login(owner)
    refused = client.post("/settings/", form(name=workspace.name, member_quota="lots"))
    assert refused.status_code == 200
    assert "Give the quota as requests/period" in refused.content.decode()
    saved = client.post("/settings/", form(name=workspace.name, member_quota="1,000 / month"))
    assert saved.status_code == 302
    workspace.refresh_from_db()
    assert workspace.member_quota == {"requests": 1000, "period": "month"}
    assert 'value="1000/month"' in client.get("/settings/").content.decode()
    change = AuditEvent.objects.get(action="settings.changed", subject="member_quota")
    assert change.data["after"] == {"requests": 1000, "period": "month"}
    client.post("/settings/", form(name=workspace.name, member_quota=""))
    workspace.refresh_from_db()
    assert workspace.member_quota is None


def test_key_health_counts_the_keys_past_80_percent_and_the_list_shows_them(client, live_server):
    owner = owner_of()
    high = make_key(user=owner, scopes=["pages:read"], quota=Quota(5, "day"), name="Busy")
    low = make_key(user=owner, scopes=["pages:read"], quota=Quota(50, "day"), name="Calm")
    make_key(user=owner, scopes=["pages:read"], name="Unmetered")
    for made in (high, low):
        for _ in range(4):
            assert call(live_server, made.secret).status_code == 200
    client.force_login(owner)
    health = client.get("/integrations/api/health/").content.decode()
    tile = health[health.index('data-testid="health-quota-high"') :]
    assert '<span class="count">1</span>' in tile[:200]
    listing = client.get("/integrations/api/?quota_high=1").content.decode()
    assert "Busy" in listing and "Calm" not in listing and "Unmetered" not in listing


def test_the_usage_page_shows_each_busy_keys_quota_this_period(client, live_server):
    owner = owner_of()
    made = make_key(user=owner, scopes=["pages:read"], quota=Quota(100, "month"), name="Shop")
    plain = make_key(user=owner, scopes=["pages:read"], name="Plain")
    for secret in (made.secret, plain.secret):
        for _ in range(3):
            assert call(live_server, secret).status_code == 200
    client.force_login(owner)
    page = client.get("/usage/").content.decode()
    assert page.count('data-testid="usage-quota"') == 1
    assert "3 of 100 this month" in page
