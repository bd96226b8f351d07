"""Service accounts and the hand-over in Chromium, end to end (docs/product.md §12): an owner
makes a service account and its key, which answers; an admin who joined through a real
invitation makes a key that serves traffic; the owner opens Remove, sees that key's requests,
hands it over with a 1-hour grace and copies the new secret; the old secret answers as the
service account until the grace ends, then 401; the admin's other keys are revoked at once;
both keys' pages show the hand-over."""

from datetime import timedelta

import pytest
import requests
import time_machine
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.metering.buffer import usage_flush
from apps.workspaces.models import ServiceAccount
from tests.browser.test_approvals import join_as_admin
from tests.browser.test_dashboard import sign_in
from tests.factories import owner_of

pytestmark = pytest.mark.django_db(transaction=True)


def whoami(live_server, secret):
    answer = requests.get(
        f"{live_server.url}/api/v1/workspace",
        headers={"Authorization": f"Bearer {secret}"},
        timeout=10,
    )
    return answer.status_code, answer.json().get("userEmail") or answer.json().get("error")


def create_key(page, name: str) -> str:
    """Fill the create form with `name` and Pages: Read; the secret shown once."""
    page.fill("input[name=name]", name)
    page.locator("label.segment", has=page.locator("input[name=access_pages][value=read]")).click()
    page.click("button:has-text('Create key')")
    return page.text_content("[data-testid=new-secret]").strip()


def test_a_key_survives_its_maker_leaving_through_a_hand_over(page, browser, live_server, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    owner_of(email="owner@acme.test")
    sign_in(page, "owner@acme.test")

    # The owner makes a service account and its key.
    page.click("nav >> text=Team")
    page.click("nav.tabs >> text=Service accounts")
    assert "No service accounts yet" in page.text_content("main")
    page.fill("input[name=name]", "CI deploy")
    page.click("button:has-text('Make service account')")
    assert "now give it a key" in page.text_content(".flashes")
    account = ServiceAccount.objects.get(name="CI deploy")
    page.click("main >> a:has-text('New key')")
    assert "belongs to the service account" in page.text_content(
        "[data-testid=service-account-note]"
    )
    account_secret = create_key(page, "Deploys")
    assert whoami(live_server, account_secret) == (200, account.user.email)

    # An admin joins through a real invitation and makes keys that serve traffic.
    ada = join_as_admin(page, browser, live_server)
    ada.goto("/integrations/api/new/")
    hook_secret = create_key(ada, "Deploy hook")
    ada.goto("/integrations/api/new/")
    other_secret = create_key(ada, "Scratch key")
    ada.context.close()
    for _ in range(4):
        assert whoami(live_server, hook_secret) == (200, "ada@acme.test")
    usage_flush()

    # The owner opens Remove: the key in use, its requests, the hand-over.
    page.goto("/settings/team/")
    page.get_by_role("link", name="Remove ada@acme.test").click()
    hook = ApiKey.objects.get(name="Deploy hook")
    in_use = page.locator(f"[data-testid=in-use-{hook.pk}]")
    assert in_use.locator("[data-testid=in-use-requests]").text_content() == "4"
    assert "get_workspace" in in_use.text_content()
    assert "Scratch key" not in page.text_content("[data-testid=keys-in-use]")
    in_use.locator("select[name=grace]").select_option("1h")
    in_use.locator("button:has-text('Hand over')").click()
    new_secret = page.text_content("[data-testid=new-secret]").strip()
    assert "Replaces" in page.text_content(".facts")
    assert "Key handed over to " in page.text_content("h1")
    # Where the job stands: Ada's only key in use is decided, the last step is to remove her.
    assert "No key of ada@acme.test in use is left to decide" in page.text_content(
        "[data-testid=handover-next]"
    )
    page.click("button.copy[data-copy-target='#new-secret']")
    assert whoami(live_server, new_secret) == (200, account.user.email)
    handed = ApiKey.objects.get(user=account.user, name="Deploy hook")

    # The old secret acts as the service account's new key; the rest of Ada's keys go.
    page.click("text=Last step: remove ada@acme.test")
    page.click("button:has-text('Remove from the team')")
    assert "Removed ada@acme.test" in page.text_content(".flashes")
    assert whoami(live_server, hook_secret) == (200, account.user.email)
    assert whoami(live_server, other_secret) == (401, "revoked-key")
    assert whoami(live_server, account_secret)[0] == 200

    # Both keys' pages say so; the old one names the new key, links to it, and says until when
    # its secret works as it, with no incident panel.
    for key in (hook, handed):
        page.goto(f"/integrations/api/keys/{key.pk}/")
        assert "Key handed over to a service account" in page.text_content("main")
    page.goto(f"/integrations/api/keys/{hook.pk}/")
    assert "Its secret still works, as the service account's key, until" in page.text_content(
        "[data-testid=handover-secret]"
    )
    assert page.locator("text=What this key did").count() == 0
    page.click("text=Go to the service account's key")
    page.wait_for_url(f"**/integrations/api/keys/{handed.pk}/")

    # When the grace ends, the old secret stops; the new one goes on.
    with time_machine.travel(timezone.now() + timedelta(hours=1, seconds=5)):
        assert whoami(live_server, hook_secret)[0] == 401
        assert whoami(live_server, new_secret) == (200, account.user.email)
