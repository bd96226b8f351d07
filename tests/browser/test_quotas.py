"""Quotas in Chromium at 1280 and 390 px: given on the create form, read on the key list (used
of the allowance, a meter) and the key's page (used, left, the refill), no page wider than the
screen, and axe finds nothing serious."""

import httpx
import pytest
from playwright.sync_api import expect

from apps.common.quota_periods import Quota
from tests.browser.test_accessibility import AXE, axe_violations
from tests.browser.test_dashboard import sign_in
from tests.factories import make_key, owner_of

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("width", [1280, 390])
def test_a_quota_is_given_on_the_form_and_read_on_the_list_and_the_keys_page(
    browser, live_server, shoot, width
):
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: npm install --prefix var/node axe-core@4.14.1")
    owner = owner_of(email="owner@acme.test")
    busy = make_key(user=owner, name="Shop sync", scopes=["pages:read"], quota=Quota(5, "day"))
    for _ in range(4):
        answer = httpx.get(
            f"{live_server.url}/api/v1/workspace",
            headers={"Authorization": f"Bearer {busy.secret}"},
            timeout=10,
        )
        assert answer.status_code == 200
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": width, "height": 900}, bypass_csp=True
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        sign_in(page, "owner@acme.test")
        row = page.locator("tr", has_text="Shop sync")
        expect(row.get_by_test_id("quota")).to_contain_text("4 of 5 today")
        expect(row.locator("meter")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert axe_violations(page) == []
        shoot(page, f"quota-list-{width}")

        row.get_by_role("link", name="Shop sync", exact=True).click()
        facts = page.get_by_test_id("quota-detail")
        expect(facts).to_contain_text("4 used")
        expect(facts).to_contain_text("1 left")
        expect(facts).to_contain_text("Refills to 5")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert axe_violations(page) == []
        shoot(page, f"quota-key-page-{width}")

        page.goto("/integrations/api/new/")
        page.fill("input[name=name]", "Metered")
        page.click("label.segment:has(input[name=access_pages][value=read])")
        page.locator("summary", has_text="Restrictions").click()
        page.fill("input[name=quota_requests]", "2500")
        page.select_option("select[name=quota_period]", "week")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert axe_violations(page) == []
        shoot(page, f"quota-create-{width}")
        page.get_by_role("button", name="Create key").click()
        expect(page.get_by_test_id("new-secret")).to_be_visible()
        page.goto("/integrations/api/")
        metered = page.locator("tr", has_text="Metered")
        expect(metered.get_by_test_id("quota")).to_contain_text("0 of 2,500 this week")
    finally:
        context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_a_quota_is_shared_on_the_service_accounts_page_and_drawn_on_its_keys_page(
    browser, live_server, shoot, width
):
    from django.utils import timezone

    from apps.audit.services import Actor
    from apps.service_accounts.services import service_account_create
    from apps.usage.models import KeyUsageHour

    owner = owner_of(email="owner@acme.test")
    workspace = owner.memberships.get().workspace
    account = service_account_create(
        workspace=workspace, name="Nightly sync", actor=Actor.of_user(owner)
    )
    key = make_key(user=account.user, workspace=workspace, name="Sync key", scopes=["pages:read"])
    hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    KeyUsageHour.objects.create(key=key.key, hour=hour, operation="x", outcome="2xx", count=120)
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": width, "height": 900}, bypass_csp=True
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        sign_in(page, "owner@acme.test")
        page.goto(f"/settings/team/service-accounts/{account.pk}/")
        expect(page.get_by_test_id("shared-quota")).to_contain_text("None shared")
        form = page.get_by_test_id("shared-quota-form")
        form.locator("input[name=shared_quota]").fill("500/week")
        form.get_by_role("button", name="Save quota").click()
        expect(page.get_by_test_id("shared-quota")).to_contain_text(
            "Shared by all its keys, 500 requests a week"
        )
        expect(page.get_by_test_id("shared-quota").locator("meter")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert axe_violations(page) == []
        shoot(page, f"shared-quota-account-{width}")

        page.get_by_role("link", name="Sync key").click()
        expect(page.get_by_test_id("quota-shared")).to_contain_text("Nightly sync")
        chart = page.get_by_test_id("quota-chart")
        expect(chart).to_contain_text("against its allowance of 500")
        expect(chart).to_contain_text("120 counted so far")
        expect(chart.get_by_test_id("quota-allowance")).to_be_attached()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert axe_violations(page) == []
        shoot(page, f"shared-quota-key-page-{width}")
    finally:
        context.close()
