"""Approvals in Chromium, end to end: an owner turns the policy on over the API; an admin who
joined through a real invitation creates a write key in the dashboard and one over the API,
both waiting (401 pending-key); the owner, asked for the password again, approves one on the
waiting list and the same secret answers at once, and denies the other, which stays dead."""

from datetime import timedelta

import pytest
import requests
import time_machine
from django.core import mail
from django.utils import timezone
from playwright.sync_api import expect

from apps.api.scopes import ALL_SCOPES, KEY_SCOPES
from apps.workspaces.models import Workspace
from tests.browser.test_dashboard import sign_in
from tests.conftest import run_tasks
from tests.factories import PASSWORD, make_key, owner_of

pytestmark = pytest.mark.django_db(transaction=True)
WIDTHS = {"desktop": 1280, "phone": 390}


def api(live_server, method, path, secret, body=None):
    return requests.request(
        method,
        f"{live_server.url}/api/v1{path}",
        json=body,
        headers={"Authorization": f"Bearer {secret}"},
        timeout=10,
    )


def join_as_admin(page, browser, live_server) -> None:
    """The owner invites ada@acme.test as admin on the Team page; Ada signs up through the
    link in her own browser and accepts."""
    page.click("nav >> text=Team")
    page.fill("input[name=email]", "ada@acme.test")
    page.select_option("form.form-card select[name=role]", "admin")
    page.click("button:has-text('Send invitation')")
    link = next(word for word in mail.outbox[-1].body.split() if "/invitations/" in word)
    ada = browser.new_context(base_url=live_server.url).new_page()
    ada.goto(link)
    ada.click("a:has-text('Create an account')")
    ada.fill("input[name=password1]", "a-much-longer-passphrase-7")
    ada.click("button:has-text('Create account')")
    ada.click("button:has-text('Accept and join')")
    ada.wait_for_url("**/integrations/api/")
    return ada


def test_an_owner_approves_and_denies_waiting_keys_in_the_browser(
    page, browser, live_server, shoot, settings, tmp_path
):
    settings.DEBUG = True  # the development mailbox, for the e-mail's picture
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path)
    owner = owner_of(email="owner@acme.test")
    workspace = owner.memberships.get().workspace
    owner_key = make_key(user=owner, scopes=[*ALL_SCOPES, *KEY_SCOPES], name="Owner's tools")
    sign_in(page, "owner@acme.test")
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"  # the invitation
    ada = join_as_admin(page, browser, live_server)
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    ada_user = workspace.memberships.get(user__email="ada@acme.test").user
    ada_tools = make_key(user=ada_user, workspace=workspace, scopes=[*ALL_SCOPES, *KEY_SCOPES])

    # The owner requires approval of keys that can change things, over the API.
    changed = api(
        live_server, "PATCH", "/workspace/policy", owner_key.secret, {"approval": "write"}
    )
    assert changed.status_code == 200 and changed.json()["approval"] == "write"
    assert Workspace.objects.get(pk=workspace.pk).key_approval == "write"

    # Ada creates a write key in the dashboard: its secret at once, but it waits.
    ada.goto("/integrations/api/new/")
    assert "waits for an owner" in ada.text_content("[data-testid=approval-policy]")
    ada.fill("input[name=name]", "Course publisher")
    ada.fill("textarea[name=description]", "Publishes the spring course pages from our CI")
    ada.locator("label.segment", has=ada.locator("input[name=access_pages][value=write]")).click()
    ada.click("button:has-text('Create key')")
    assert "waits for an owner's approval" in ada.text_content("[data-testid=waits-for-approval]")
    dashboard_secret = ada.text_content("[data-testid=new-secret]").strip()
    refused = api(live_server, "GET", "/workspace", dashboard_secret)
    assert refused.status_code == 401 and refused.json()["error"] == "pending-key"
    # And one over the API, with her own key-minting key.
    made = api(
        live_server,
        "POST",
        "/keys",
        ada_tools.secret,
        {"name": "Bulk import", "scopes": ["products:write"]},
    )
    assert made.json()["state"] == "pending"
    api_secret = made.json()["secret"]
    assert api(live_server, "GET", "/workspace", api_secret).json()["error"] == "pending-key"
    # Ada sees her waiting key on its page, and cannot open the owners' list.
    ada.click('a:has-text("Go to the key\'s page")')
    assert "Waiting for an owner's approval" in ada.text_content("[data-testid=approval-state]")
    for width, pixels in WIDTHS.items():
        ada.set_viewport_size({"width": pixels, "height": 900})
        shoot(ada, f"{width}-key-page-pending")
    assert ada.goto("/integrations/api/waiting/").status == 403
    ada.context.close()

    # The owners' e-mail, in the development mailbox.
    run_tasks()
    for width, pixels in WIDTHS.items():
        page.set_viewport_size({"width": pixels, "height": 900})
        page.goto("/dev/mail/")
        assert "asks you to approve an API key" in page.text_content("main")
        assert "the API key “Course publisher”" in page.text_content("main")
        assert "Restrictions: none" in page.text_content("main")
        shoot(page, f"{width}-approval-email")
    page.set_viewport_size({"width": 1280, "height": 900})

    # The owner: a count in the navigation, the list, and a password before deciding.
    page.goto("/integrations/api/")
    assert "2 waiting for your approval" in page.text_content("nav.sidenav")
    page.click("nav >> text=Approvals")
    page.wait_for_url("**/integrations/api/waiting/")
    items = page.locator("[data-testid=waiting-key]")
    expect(items).to_have_count(2)  # the click starts the page; wait for its items
    assert "Publishes the spring course pages" in items.first.text_content()
    for width, pixels in WIDTHS.items():
        page.set_viewport_size({"width": pixels, "height": 900})
        shoot(page, f"{width}-approvals")
    page.set_viewport_size({"width": 1280, "height": 900})
    with time_machine.travel(timezone.now() + timedelta(minutes=11)):
        page.locator("[data-testid=waiting-key]", has_text="Course publisher").locator(
            "button:has-text('Approve')"
        ).click()
        page.wait_for_url("**/reauthenticate/**")
        page.fill("input[name=password]", PASSWORD)
        page.click("main button[type=submit]")
        page.wait_for_url("**/integrations/api/waiting/")
        assert "Approved “Course publisher”" in page.text_content(".flashes")
        # The same secret answers on the very next request.
        assert api(live_server, "GET", "/workspace", dashboard_secret).status_code == 200

        waiting = page.locator("[data-testid=waiting-key]", has_text="Bulk import")
        waiting.locator("input[name=reason]").fill("Use the shared import key")
        waiting.locator("button:has-text('Deny')").click()
        assert "Denied “Bulk import”" in page.text_content(".flashes")
        denied = api(live_server, "GET", "/workspace", api_secret)
        assert denied.status_code == 401 and denied.json()["error"] == "denied-key"
        assert "Nothing waits for you" in page.text_content("main")
        assert page.locator("nav.sidenav .nav-count").count() == 0
