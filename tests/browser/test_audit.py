import re

import pytest
from django.core import mail
from playwright.sync_api import expect

from apps.api_keys.services import api_key_revoke
from apps.audit.services import Actor
from tests.factories import PASSWORD, make_key, owner_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_audit_page_filters_and_exports(page, live_server, shoot):
    owner = owner_of(email="owner@acme.test")
    workspace = owner.memberships.get().workspace
    kept = make_key(user=owner, workspace=workspace, name="Kept key").key
    gone = make_key(user=owner, workspace=workspace, name="Leaked key").key
    api_key_revoke(key=gone, actor=Actor.of_operator("revokeapikey"))

    page.goto("/sign-in/")
    page.fill("input[name=login]", "owner@acme.test")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/integrations/api/")
    page.click('nav >> text="Audit"')  # not Audit streaming
    rows = page.locator("table.audit tbody tr")
    expect(rows).to_have_count(4)  # two keys made, one revoked, and this sign-in (newest first)
    assert "Signed in" in rows.first.text_content()
    assert "Key revoked" in rows.nth(1).text_content()
    shoot(page, "30-audit")

    page.select_option("select[name=action]", "key.revoked")
    page.click("button:has-text('Filter')")
    page.wait_for_url("**action=key.revoked**")
    assert page.locator("table.audit tbody tr").count() == 1
    assert "operator (revokeapikey)" in page.text_content("table.audit")
    shoot(page, "31-audit-filtered")

    with page.expect_download() as download_info:
        page.click("text=Export CSV")
    path = download_info.value.path()
    content = open(path, encoding="utf-8").read()
    assert content.splitlines()[0].startswith("time,time_utc,action,action_label,actor,")
    assert len(content.strip().splitlines()) == 2
    assert "Leaked key" in content and "Kept key" not in content
    assert kept.hint not in content


def test_team_page_invites_a_teammate_who_accepts_then_changes_their_role(
    page, browser, live_server, shoot
):
    owner_of(email="owner@acme.test")
    page.goto("/sign-in/")
    page.fill("input[name=login]", "owner@acme.test")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/integrations/api/")
    page.click("nav >> text=Team")
    page.fill("input[name=email]", "ada@acme.test")
    page.select_option("form.form-card select[name=role]", "admin")
    page.click("button:has-text('Send invitation')")
    assert "Invited ada@acme.test as admin" in page.text_content(".flashes")
    assert page.locator("tr", has_text="ada@acme.test").locator("text=Pending").count() == 1
    link = re.search(r"http://\S+/invitations/\S+/", mail.outbox[-1].body).group(0)

    # Ada, in her own browser, creates her account through the link and accepts.
    ada = browser.new_context(base_url=live_server.url).new_page()
    ada.goto(link)
    ada.click("a:has-text('Create an account')")
    assert ada.input_value("input[name=email]") == "ada@acme.test"
    ada.fill("input[name=password1]", "a-much-longer-passphrase-7")
    ada.click("button:has-text('Create account')")
    ada.click("button:has-text('Accept and join')")
    ada.wait_for_url("**/integrations/api/")
    assert "You are now an admin of" in ada.text_content(".flashes")
    ada.context.close()

    page.reload()
    assert page.locator("text=Pending invitations").count() == 0
    row = page.locator("tr", has_text="ada@acme.test")
    row.locator("select[name=role]").select_option("owner")
    row.locator("button:has-text('Change')").click()
    assert "ada@acme.test is now owner" in page.text_content(".flashes")
    shoot(page, "32-team")
    page.click('nav >> text="Audit"')  # not Audit streaming
    expect(page.locator("table.audit tbody tr", has_text="Role changed")).to_have_count(1)
