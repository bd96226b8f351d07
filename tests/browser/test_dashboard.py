import re
from datetime import timedelta

import pytest
import requests
from django.core import mail
from django.utils import timezone
from playwright.sync_api import expect

from apps.api_keys.models import ApiKey
from tests.factories import PASSWORD, make_key, owner_of

pytestmark = pytest.mark.django_db(transaction=True)


def sign_in(page, email: str, password: str = PASSWORD) -> None:
    page.goto("/sign-in/")
    page.fill("input[name=login]", email)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url("**/integrations/api/")


def api_get(live_server, secret: str) -> requests.Response:
    return requests.get(
        f"{live_server.url}/api/v1/workspace",
        headers={"Authorization": f"Bearer {secret}"},
        timeout=10,
    )


def test_sign_up_create_key_use_it_revoke_it(page, live_server, shoot):
    page.goto("/sign-up/")
    shoot(page, "01-sign-up")
    page.fill("input[name=email]", "founder@acme.test")
    page.fill("input[name=password1]", "a-much-longer-passphrase-7")
    page.fill("input[name=workspace_name]", "Acme Academy")
    page.click("button[type=submit]")
    page.wait_for_url("**/account/confirm-email/")
    assert "Check your e-mail" in page.text_content("h1")
    link = re.search(r"http://\S+/account/confirm-email/\S+/", mail.outbox[-1].body).group(0)
    page.goto(link)
    page.click("button[type=submit]")
    page.wait_for_url("**/integrations/api/")
    assert "confirmed" in page.text_content(".flashes")
    shoot(page, "02-keys-empty")

    page.click("text=Create your first key")
    # Confirming the address signed her in, which proved the inbox as a sign-in code does:
    # no password is asked again minutes after signing up.
    page.wait_for_url("**/integrations/api/new/")
    page.fill("input[name=name]", "Zapier sync")
    assert page.is_checked("input[name=expiry][value='365']")
    assert page.evaluate("document.activeElement.name") == "name"  # focused on arrival
    assert "until" in page.text_content("label:has(input[name=expiry][value='365'])")
    page.click("text=Read & write: all resources")  # the shortcut, then narrowed by hand
    assert page.is_checked("input[name=access_communities][value=write]")
    page.click("label.segment:has(input[name=access_products][value=read])")
    page.click("label.segment:has(input[name=access_communities][value=none])")
    shoot(page, "03-create-key")
    page.click("button:has-text('Create key')")
    secret = page.text_content("[data-testid=new-secret]").strip()
    assert secret.startswith("gwk_")
    # Focus is on the secret's Copy button; copying is announced.
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Copy the secret"
    page.keyboard.press("Enter")
    expect(page.locator("#announcer")).to_contain_text("Cop")
    assert "will not be shown again" in page.text_content(".secret-panel")
    shoot(page, "04-secret-once")

    response = api_get(live_server, secret)
    assert response.status_code == 200
    assert response.json()["workspaceName"] == "Acme Academy"
    assert response.json()["scopes"] == ["pages:read", "pages:write", "products:read"]

    page.reload()  # the browser re-sends the form: no second key, no secret
    assert secret not in page.content()
    assert ApiKey.objects.count() == 1
    page.goto("/integrations/api/")
    assert secret not in page.content()
    row = page.locator("tr", has_text="Zapier sync")
    assert row.locator(".badge--active").text_content() == "Active"
    shoot(page, "05-keys-list")

    # The in-page dialog: Cancel changes nothing and gives focus back to the Revoke button.
    row.locator("summary").click()  # the row's actions menu (⋯)
    revoke = row.get_by_role("button", name="Revoke Zapier sync")
    revoke.click()
    dialog = page.locator("dialog#confirm-dialog")
    assert dialog.is_visible()
    # Named with its hint: two keys may share a name.
    hint = ApiKey.objects.get().hint
    assert dialog.locator("h2").text_content() == f"Revoke “Zapier sync” ({hint})?"
    shoot(page, "05b-revoke-dialog")
    dialog.get_by_role("button", name="Cancel").click()
    assert not dialog.is_visible()
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == (
        "Revoke Zapier sync"
    )
    assert api_get(live_server, secret).status_code == 200
    revoke.click()
    dialog.get_by_role("button", name="Revoke key").click()
    page.locator("tr", has_text="Zapier sync").locator(".badge--revoked").wait_for()
    expect(page.locator("#announcer")).to_contain_text("Revoked “Zapier sync”")
    assert page.evaluate("document.activeElement.textContent") == "Zapier sync"
    # The active list's note now counts it among the revoked keys it hides.
    expect(page.locator("#inactive-note")).to_contain_text(
        "Show revoked, expired and denied keys too (1)"
    )
    shoot(page, "06-revoked-in-place")
    response = api_get(live_server, secret)
    assert response.status_code == 401
    assert response.json()["error"] == "revoked-key"


def test_expired_key_shows_expired(page, live_server, shoot):
    owner = owner_of(email="owner@acme.test")
    created = make_key(user=owner, name="Old deploy key", expires_in=timedelta(days=7))
    ApiKey.objects.filter(pk=created.key.pk).update(
        created_at=timezone.now() - timedelta(days=30),
        expires_at=timezone.now() - timedelta(days=1),
    )
    sign_in(page, "owner@acme.test")
    # The list opens on active keys; one click shows the others.
    assert page.locator("tr", has_text="Old deploy key").count() == 0
    page.click("text=Show revoked, expired and denied keys too")
    row = page.locator("tr", has_text="Old deploy key")
    assert row.locator(".badge--expired").text_content() == "Expired"
    shoot(page, "07-expired")
    assert api_get(live_server, created.secret).json()["error"] == "expired-key"


def test_settings_change_shows_in_the_api(page, live_server, shoot):
    owner = owner_of(email="owner@acme.test")
    created = make_key(user=owner)
    sign_in(page, "owner@acme.test")
    page.click("nav >> text=Settings")
    page.fill("input[name=name]", "Renamed Academy")
    page.select_option("select[name=timezone]", "Europe/Berlin")
    page.check("input[name=auto_transcribe_uploads]")
    page.select_option("select[name=transcription_language]", "de")
    shoot(page, "08-settings")
    page.click("button:has-text('Save settings')")
    assert "Settings saved" in page.text_content(".flashes")
    record = api_get(live_server, created.secret).json()
    assert record["workspaceName"] == "Renamed Academy"
    assert record["timezone"] == "Europe/Berlin"
    assert record["autoTranscribeUploads"] is True
    assert record["transcriptionLanguage"] == "de"


def test_revoke_works_with_javascript_off(browser, live_server, shoot):
    owner = owner_of(email="owner@acme.test")
    created = make_key(user=owner, name="No-JS key")
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    page = context.new_page()
    try:
        sign_in(page, "owner@acme.test")
        row = page.locator("tr", has_text="No-JS key")
        row.locator("summary[aria-label='Actions for No-JS key']").click()  # native, no script
        row.locator("button:has-text('Revoke')").click()
        page.wait_for_url(re.compile(r"/revoke/"))
        shoot(page, "09-revoke-confirm-no-js")
        page.click("button:has-text('Revoke key')")
        page.wait_for_url("**/integrations/api/")
        assert "Revoked “No-JS key”" in page.text_content(".flashes")
        page.goto("/integrations/api/?state=revoked")
        assert page.locator("tr", has_text="No-JS key").locator(".badge--revoked").count() == 1
        shoot(page, "10-revoked-no-js")
    finally:
        context.close()
    assert api_get(live_server, created.secret).json()["error"] == "revoked-key"


def test_pages_are_readable_on_a_phone(browser, live_server, shoot):
    owner = owner_of(email="owner@acme.test")
    make_key(user=owner, name="Phone key", tag="cli")
    context = browser.new_context(base_url=live_server.url, viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        sign_in(page, "owner@acme.test")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        shoot(page, "11-phone-keys")
    finally:
        context.close()


def test_a_key_limited_to_one_community_found_with_the_search_box(page, live_server, shoot):
    from tests.factories import make_community

    owner = owner_of(email="owner@acme.test")
    workspace = owner.memberships.get().workspace
    names = ["Alpha makers", "Beta testers", "Gamma rays", "Delta force"]
    communities = {name: make_community(workspace, name) for name in names}
    sign_in(page, "owner@acme.test")
    page.goto("/integrations/api/new/")
    page.fill("input[name=name]", "Gamma bot")
    page.click("label.segment:has(input[name=access_communities][value=read])")
    page.click("summary:has-text('Restrictions')")
    page.click("label.segment:has(input[name=limit_communities][value=selected])")
    search = page.locator("input.object-search[aria-controls=chosen-communities]")
    expect(search).to_be_visible()  # shown only when scripts run
    search.fill("gam")
    visible = page.locator("#chosen-communities label:visible")
    expect(visible).to_have_count(1)
    expect(visible).to_have_text("Gamma rays")
    visible.click()
    page.fill("textarea[name=networks]", "127.0.0.0/8")
    shoot(page, "03c-create-key-restricted")
    page.click("button:has-text('Create key')")
    secret = page.text_content("[data-testid=new-secret]").strip()

    answer = requests.get(
        f"{live_server.url}/api/v1/communities",
        headers={"Authorization": f"Bearer {secret}"},
        timeout=10,
    )
    assert [c["name"] for c in answer.json()["data"]] == ["Gamma rays"]
    hidden = communities["Alpha makers"].pk
    assert (
        requests.get(
            f"{live_server.url}/api/v1/communities/{hidden}/posts",
            headers={"Authorization": f"Bearer {secret}"},
            timeout=10,
        ).status_code
        == 404
    )
    page.goto("/integrations/api/")
    expect(page.locator("[data-testid=restriction-summary]")).to_have_text(
        "1 community · 1 network"
    )
    page.click("text=Gamma bot")
    expect(page.locator("[data-testid=restrictions]")).to_have_text("Only 1 community: Gamma rays")


def test_the_object_pickers_follow_the_permissions(page, live_server):
    """A resource the key gets no access to has nothing to pick: its picker hides, and shows
    again once a permission is chosen for it."""
    owner_of(email="owner@example.com")
    sign_in(page, "owner@example.com")
    page.goto(live_server.url + "/integrations/api/new/")
    page.click("summary:has-text('Restrictions')")
    communities = page.locator(".restriction-group[data-group=communities]")
    expect(communities).to_be_hidden()
    page.locator("fieldset.permission-row", has_text="Communities").get_by_text(
        "Read", exact=True
    ).click()
    expect(communities).to_be_visible()
    expect(page.locator(".restriction-group[data-group=pages]")).to_be_hidden()
    page.click("text=Read & write: all resources")
    expect(page.locator(".restriction-group[data-group=pages]")).to_be_visible()


def test_a_refused_create_puts_focus_on_the_first_field_in_error_in_view(page, live_server):
    """Issue 54: with no permission chosen, the error sat 1,178 px below and focus on Name."""
    owner_of(email="owner@example.com")
    sign_in(page, "owner@example.com")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(live_server.url + "/integrations/api/new/")
    page.click("button[name=preset][value=none]")
    page.fill("input[name=name]", "Nothing allowed")
    page.click("button:has-text('Create key')")
    error = page.locator(".permissions-field .error[role=alert]")
    expect(error).to_be_visible()
    expect(error).to_be_in_viewport()
    focused = page.evaluate("document.activeElement.closest('.permissions-field') !== null")
    assert focused, page.evaluate("document.activeElement.outerHTML")
