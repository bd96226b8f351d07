"""axe-core, run in Chromium on every page: no accessibility violation of any impact (critical,
serious, moderate or minor)."""

import os
from datetime import timedelta
from pathlib import Path

import pytest

from apps.audit.services import Actor
from apps.invitations.services import invitation_create
from apps.scim.models import ScimRequest
from apps.scim.tokens import scim_token_create
from apps.workspaces.services import team_suspend
from tests.browser.test_dashboard import sign_in
from tests.browser.test_every_page import owner_pages, seed_oauth, seed_webhooks
from tests.factories import (
    PASSWORD,
    MembershipFactory,
    UserFactory,
    make_community,
    make_key,
    member_of,
    owner_of,
)

pytestmark = pytest.mark.django_db(transaction=True)

AXE = Path(__file__).resolve().parents[2] / "var/node/node_modules/axe-core/axe.min.js"


@pytest.fixture
def axe_page(browser, live_server):
    if not AXE.exists():
        message = f"{AXE} is missing: npm install --prefix var/node axe-core@4.14.1"
        if os.environ.get("GATEHOUSE_REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)
    # axe is injected as a script of the page, which the app's own CSP would (rightly) refuse.
    context = browser.new_context(base_url=live_server.url, bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


def axe_violations(page) -> list[str]:
    page.add_script_tag(path=str(AXE))
    result = page.evaluate(
        "axe.run(document, {runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', "
        "'best-practice']})"
    )
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at "
        + ", ".join(node["target"][0] for node in v["nodes"][:3])
        for v in result["violations"]
    ]


def test_every_page_passes_axe(axe_page, browser, live_server):
    # Around 10 s, and worth it: axe-core analyses each of the ~20 pages of both audiences in
    # one browser, and a page left out is a page nobody checks.
    page = axe_page
    owner = owner_of(email="owner@acme.test")
    workspace = owner.memberships.get().workspace
    community = make_community(workspace, "Makers")
    member_of(community, email="maker@example.com")
    key = make_key(user=owner, name="Zapier sync", expires_in=timedelta(days=3)).key
    _, invitation = invitation_create(
        workspace=workspace,
        community=community,
        email="invited@example.com",
        role="member",
        actor=Actor.of_operator("test"),
        base_url="",
    )
    found = {}
    for name, path in {
        "sign-in": "/sign-in/",
        "sign-up": "/sign-up/",
        "password-reset": "/account/password/reset/",
        "invitation": invitation,
    }.items():
        page.goto(path)
        found[name] = axe_violations(page)
    sign_in(page, "owner@acme.test")
    endpoint_id = seed_webhooks(owner)
    pages = {**owner_pages(key.pk, community.pk, endpoint_id), **seed_oauth(owner, live_server.url)}
    # An admin's key waiting for approval: the owners' list and the key's page, with their forms.
    admin = UserFactory(email="admin@acme.test")
    MembershipFactory(workspace=workspace, user=admin, role="admin")
    workspace.key_approval = "write"
    workspace.save(update_fields=["key_approval"])
    waiting = make_key(user=admin, workspace=workspace, name="Publisher", scopes=["pages:write"])
    pages["key-page-waiting"] = f"/integrations/api/keys/{waiting.key.pk}/"
    # Someone the identity provider suspended: the Team page's state, the key's badge and card,
    # and the provider's token and last request on Settings → Single sign-on.
    leaver = UserFactory(email="leaver@acme.test")
    left = MembershipFactory(workspace=workspace, user=leaver, role="admin")
    paused = make_key(user=leaver, workspace=workspace, name="Old sync").key
    token = scim_token_create(workspace=workspace, name="Okta", actor=Actor.of_user(owner)).token
    team_suspend(membership=left, actor=Actor.of_identity_provider("Okta"))
    ScimRequest.objects.create(
        workspace=workspace, token=token, method="PATCH", path=f"/scim/v2/Users/{left.pk}",
        status=200, outcome="Updated leaver@acme.test: suspended, 1 key paused",
    )  # fmt: skip
    pages["key-page-suspended"] = f"/integrations/api/keys/{paused.pk}/"
    for name, path in pages.items():
        page.goto(path)
        found[name] = axe_violations(page)
    # A phone: the header's Menu button opens the navigation and the workspace in it.
    page.set_viewport_size({"width": 390, "height": 844})
    for name in (
        "keys",
        "key-page",
        "key-page-suspended",
        "logs",
        "audit",
        "team",
        "single-sign-on",
    ):
        page.goto(pages.get(name, f"/{name}/"))
        page.get_by_role("button", name="Menu").click()
        found[f"phone-{name}"] = axe_violations(page)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.context.clear_cookies()
    sign_in_member(page)
    member_pages = {
        "portal": "/portal/",
        "developer": "/portal/settings/developer/",
        "member-connected-apps": "/portal/settings/connected-apps/",
    }
    for name, path in member_pages.items():
        page.goto(path)
        found[name] = axe_violations(page)
    assert {name: v for name, v in found.items() if v} == {}


def sign_in_member(page) -> None:
    page.goto("/sign-in/")
    page.fill("input[name=login]", "maker@example.com")
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_url("**/portal/")


def test_every_aria_describedby_points_at_an_element(page, live_server):
    owner = owner_of(email="owner@acme.test")
    workspace = owner.memberships.get().workspace
    community = make_community(workspace, "Makers")
    key = make_key(user=owner, name="Zapier sync").key
    pages = {"sign-up": "/sign-up/"}
    page.goto("/sign-up/")
    missing = {"sign-up": dangling_references(page)}
    sign_in(page, "owner@acme.test")
    for name, path in owner_pages(key.pk, community.pk).items():
        pages[name] = path
        page.goto(path)
        missing[name] = dangling_references(page)
    assert {name: ids for name, ids in missing.items() if ids} == {}


def dangling_references(page) -> list[str]:
    return page.locator("[aria-describedby]").evaluate_all(
        "elements => elements.flatMap(e => e.getAttribute('aria-describedby').split(/\\\\s+/))"
        ".filter(id => !document.getElementById(id))"
    )


def violations_of(page, rules: list[str]) -> list[str]:
    """axe's findings for `rules`, whatever their impact (heading-order is only moderate)."""
    page.add_script_tag(path=str(AXE))
    result = page.evaluate(
        "rules => axe.run(document, {runOnly: {type: 'rule', values: rules}})", rules
    )
    return [
        f"{v['id']}: {v['help']} at " + ", ".join(node["target"][0] for node in v["nodes"][:3])
        for v in result["violations"]
    ]


def test_an_opened_log_row_a_service_account_tag_and_a_stream_s_test_button_pass_axe(
    axe_page, live_server
):
    """Issue 54, item 18: the tag at 3.8:1, the opened row's duration at 4.47:1, its h3 after
    an h1, and a button whose aria-label did not contain its visible text."""
    from apps.audit.services import Actor
    from apps.audit_streams.services import stream_create
    from apps.service_accounts.services import service_account_create, service_account_key_create

    owner = owner_of(email="owner@acme.test")
    workspace = owner.memberships.get().workspace
    account = service_account_create(workspace=workspace, name="CI", actor=Actor.of_user(owner))
    made = service_account_key_create(
        account=account, name="Deploys", scopes=["pages:read"], expires_at=None,
        actor=Actor.of_user(owner),
    )  # fmt: skip
    stream_create(
        workspace, kind="https", name="SIEM", url="https://siem.example.test/in",
        actor=Actor.of_user(owner),
    )  # fmt: skip
    import requests

    requests.get(
        f"{live_server.url}/api/v1/workspace",
        headers={"Authorization": f"Bearer {made.secret}"},
        timeout=10,
    )
    page = axe_page
    sign_in(page, "owner@acme.test")
    rules = ["color-contrast", "heading-order", "label-content-name-mismatch"]
    page.goto("/logs/")
    page.locator(".request summary").first.click()
    assert violations_of(page, rules) == []
    for path in ("/integrations/api/", "/settings/audit-streaming/"):
        page.goto(path)
        assert violations_of(page, rules) == [], path
