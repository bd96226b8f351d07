"""Every page at desktop width and at 390 px: no horizontal scroll, and a screenshot of each.

The screenshots land in GATEHOUSE_SCREENSHOTS (var/screenshots by default); docs/screenshots/
in the repository holds a set taken this way.
"""

from datetime import timedelta

import pytest

from apps.api_keys.restrictions import Restrictions
from apps.audit.services import Actor
from apps.communities.models import Community
from apps.invitations.services import invitation_create
from tests.browser.conftest import watch_for_csp_violations
from tests.browser.test_dashboard import sign_in
from tests.factories import make_community, make_key, member_of, owner_of

pytestmark = pytest.mark.django_db(transaction=True)

WIDTHS = {"desktop": 1280, "phone": 390}


def owner_pages(key_id: int, community_id: int, endpoint_id: int | None = None) -> dict[str, str]:
    webhook = {"webhook": f"/settings/webhooks/{endpoint_id}/"} if endpoint_id else {}
    return {
        "keys": "/integrations/api/",
        "approvals": "/integrations/api/waiting/",
        "connected-apps": "/integrations/connected-apps/",
        "key-create": "/integrations/api/new/",
        "key-page": f"/integrations/api/keys/{key_id}/",
        "key-roll": f"/integrations/api/keys/{key_id}/roll/",
        "key-revoke": f"/integrations/api/keys/{key_id}/revoke/",
        "communities": "/communities/",
        "community": f"/communities/{community_id}/",
        "settings": "/settings/",
        "team": "/settings/team/",
        "audit": "/audit/",
        "usage": "/usage/",
        "webhooks": "/settings/webhooks/",
        **webhook,
        "single-sign-on": "/settings/single-sign-on/",
        "device": "/device",
        "password": "/account/password/change/",
        "two-factor": "/account/2fa/",
        "totp": "/account/2fa/totp/activate/",
        "passkey": "/account/2fa/webauthn/add/",
        "emails": "/account/email/",
        "reauthenticate": "/account/reauthenticate/",
        "security-log": "/account/security/",
    }


def seed_oauth(owner, base_url: str) -> dict[str, str]:
    """An app connected by OAuth (listed under Connected apps) and the consent page of a second
    sign-in of the same app; returns that page's address."""
    from urllib.parse import urlencode

    from apps.api_keys.restrictions import Restrictions
    from apps.oauth.issuing import (
        Approval,
        authorization_code_find,
        authorization_code_save,
        grant_create,
    )
    from apps.oauth.models import OAuthClient

    redirect = "http://127.0.0.1:33418/callback"
    client = OAuthClient.objects.create(
        client_id="seeded-client",
        source=OAuthClient.Source.REGISTERED,
        client_name="Claude Code (a long self-chosen name for an assistant)",
        redirect_uris=[redirect],
        grant_types=["authorization_code", "refresh_token"],
    )
    workspace = owner.memberships.get().workspace
    approval = Approval(
        client=client,
        user=owner,
        workspace=workspace,
        kind="workspace",
        scopes=["pages:read", "products:read"],
        restrictions=Restrictions(),
        redirect_uri=redirect,
        resource="http://testserver/mcp",
        code_challenge="x" * 43,
        code_challenge_method="S256",
    )
    authorization_code_save(approval, "seeded-code")
    grant_create(authorization_code_find("seeded-code", client), ip="127.0.0.1")
    query = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": redirect,
        "state": "s",
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256",
        "scope": "communities:read communities:write products:read pages:read pages:write",
        "resource": base_url + "/mcp",
    }
    return {"consent": "/oauth/authorize?" + urlencode(query)}


def seed_webhooks(owner) -> int:
    """An endpoint with a long URL and a delivery log: one event delivered at the second try,
    one still failing; returns the endpoint's id."""
    from apps.webhooks.models import WebhookAttempt, WebhookDelivery
    from apps.webhooks.services import endpoint_create

    endpoint = endpoint_create(
        owner.memberships.get().workspace,
        url="https://hooks.security-team.example.com/gatehouse/events/incoming?source=prod",
        event_types=["key.created", "key.revoked", "key.leaked", "key.expiring"],
        description="The security team's SIEM",
        actor=Actor.of_user(owner),
    ).endpoint
    body = (
        '{"type":"key.revoked","timestamp":"2026-11-24T10:00:00Z","data":{"key":{"id":7,'
        '"name":"Zapier sync for the billing team","hint":"gwk_…Qt40","scopes":["pages:read"]}}}'
    )
    for n, answers in enumerate([[502, 200], [500, 500]]):
        delivery = WebhookDelivery.objects.create(
            endpoint=endpoint,
            message_id=f"msg_6f1c2a9e0b7d44e1a3c5d8f2_{n}",
            event_type=["key.revoked", "key.leaked"][n],
            payload=body,
            status="delivered" if answers[-1] == 200 else "pending",
            attempts=len(answers),
        )
        for number, status in enumerate(answers, start=1):
            WebhookAttempt.objects.create(
                delivery=delivery,
                number=number,
                duration_ms=40 + number * 7,
                response_status=status,
                response_body="ok" if status == 200 else "<html><body>Bad gateway</body></html>",
                succeeded=status == 200,
            )
    return endpoint.pk


def seed_usage(key) -> None:
    """A month of requests of every outcome, so the charts and their tables have content."""
    from django.utils import timezone

    from apps.usage.models import KeyUsageDay, KeyUsageHour

    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    for age, outcome in [(d, o) for d in range(30) for o in ("2xx", "403", "429")]:
        count = (age * 37 + len(outcome)) % 90 + (400 if outcome == "2xx" else 0)
        KeyUsageDay.objects.create(
            key=key,
            day=(now - timedelta(days=age)).date(),
            operation="list_communities",
            outcome=outcome,
            count=count,
        )
    for age in range(24):
        KeyUsageHour.objects.create(
            key=key,
            hour=now - timedelta(hours=age),
            operation="get_workspace",
            outcome="2xx" if age % 5 else "401",
            count=10 + age * 3,
        )


def seed_requests(*keys) -> None:
    """A day of each key's requests (refusals, an MCP call, a created page), so the key pages,
    Logs and a revoked key's blast radius have rows."""
    from django.utils import timezone

    from apps.metering.facts import new_request_id
    from apps.metering.records import RequestEntry
    from apps.request_log.recording import entries_write

    calls = [
        ("GET", "/api/v1/communities", "list_communities", 200, ""),
        ("POST", "/api/v1/pages", "create_page", 201, ""),
        ("GET", "/api/v1/products", "list_products", 403, "insufficient-scope"),
        ("POST", "/mcp", "get_workspace", 200, ""),
        ("GET", "/api/v1/workspace", "get_workspace", 429, "rate-limited"),
    ]
    entries = []
    for key in keys:
        end = key.revoked_at or timezone.now()
        for n in range(24):
            method, path, operation, status, error = calls[n % len(calls)]
            entries.append(
                RequestEntry(
                    request_id=new_request_id(),
                    at=end - timedelta(minutes=37 * n + 1),
                    key_id=key.pk,
                    door="mcp" if path == "/mcp" else "api",
                    method=method,
                    path=path,
                    operation=operation,
                    status=status,
                    error=error,
                    duration_ms=2.5 + n,
                    client_ip=("203.0.113.7", "2001:db8:1234:5678::42")[n % 2],
                    user_agent="Mozilla/5.0 (X11; Linux x86_64) zapier-sync/2.4 (+billing team)",
                    object_id="57" if status == 201 else "",
                )
            )
    entries_write(entries)


LEAK_URL = (
    "https://github.com/acme-academy/storefront-sync/blob/4f1c2a9e0b7d44e1a3c5d8f2a1b3/"
    "config/production.settings.env#L12"
)


def seed_leaked_key(owner):
    """A key GitHub found in a public repository: revoked as a verified report revokes it."""
    from apps.leaks.reports import leaked_key_revoke

    leaked = make_key(user=owner, name="Storefront sync", scopes=["pages:read", "pages:write"]).key
    leaked_key_revoke(leaked, LEAK_URL, "content")
    leaked.refresh_from_db()
    return leaked


# Every element, not only the document: a table wider than its card scrolls inside it and hides
# its last columns without making the page any wider.
OUT_OF_BOUNDS = """() => {
  const width = document.documentElement.clientWidth;
  const classes = el => typeof el.className === "string" && el.className.trim()
    ? "." + el.className.trim().split(/\\s+/).join(".") : "";
  const named = el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + classes(el)
    + " " + (el.textContent || "").trim().slice(0, 30);
  const out = [];
  for (const el of document.querySelectorAll("body *")) {
    if (el.closest(".sr-only, .skip-link, dialog:not([open]), script, style, template")) continue;
    const box = el.getBoundingClientRect();
    if (!box.width || !box.height || getComputedStyle(el).visibility === "hidden") continue;
    if (box.right > width + 1 || box.left < -1) {
      out.push("past the window: " + named(el));
      continue;
    }
    const card = el.parentElement && el.parentElement.closest(".card");
    const edge = card && card.getBoundingClientRect().right;
    if (card && box.right > edge + 1) {
      out.push("past its card by " + Math.round(box.right - edge) + " px: " + named(el));
      continue;
    }
    // A table keeps to the card's padding (the consent page's permissions touched its edge).
    const style = card && getComputedStyle(card);
    const inner = card && edge - parseFloat(style.paddingRight)
      - parseFloat(style.borderRightWidth);
    if (card && el.tagName === "TABLE" && box.right > inner + 1)
      out.push("in its card's padding by " + Math.round(box.right - inner) + " px: " + named(el));
  }
  return out.slice(0, 8);
}"""


# A word in a table cell or a label's value set on two lines ("owner@dem|o.gatehouse.t|est",
# "51 seco|nds ago"): each word of each cell's text is measured as a DOM range; its boxes on
# more than one line mean it was broken. Words end at spaces and hyphens (a break after a hyphen
# is a word's edge); data that is not words (a JSON body in <pre>, a URL in a .break box) may
# break anywhere.
BROKEN_WORDS = """() => {
  const broken = [];
  const range = document.createRange();
  for (const cell of document.querySelectorAll("td, th, dd")) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.parentElement.closest(".sr-only, dialog:not([open]), pre, .break")) continue;
      // A label's value may break at an address's seams (after @ . / ? & = #), never inside.
      const words = cell.tagName === "DD" ? /[^\\s\\-@.\\/?&=#]+/g : /[^\\s\\-]+/g;
      let found;
      while ((found = words.exec(node.textContent))) {
        range.setStart(node, found.index);
        range.setEnd(node, found.index + found[0].length);
        const tops = new Set([...range.getClientRects()].filter(r => r.width > 0)
          .map(r => Math.round(r.top)));
        if (tops.size > 1) broken.push(found[0]);
      }
    }
  }
  return broken.slice(0, 8);
}"""


# A segmented control (None / Read / Write / Read & write) whose choices fall onto two rows.
CONTROLS_WRAPPED = """() => [...document.querySelectorAll(".segmented")]
  .filter(control => control.offsetParent !== null)
  .filter(control => new Set([...control.children]
    .map(choice => Math.round(choice.getBoundingClientRect().top))).size > 1)
  .map(control => control.textContent.trim().replace(/\\s+/g, " "))
  .slice(0, 4)"""


ONE_LINE = "el => el.getBoundingClientRect().height"

# One date system: no browser date input (its "mm/dd/yyyy" beside our "Nov 26, 2026"), and no
# moment whose zone is named twice ("06:57 UTC UTC", "08:02 UTC (UTC)").
DATE_SYSTEM = r"""() => {
  const out = [...document.querySelectorAll("input[type=date], input[type=datetime-local]")]
    .map(input => "a browser date input: " + input.name);
  const twice = document.body.innerText.match(/\d\d:\d\d ([A-Z]{3,5}) \(?\1\b/);
  if (twice) out.push("a zone named twice: " + twice[0]);
  return out;
}"""

# No table wider than its card: nothing reached by scrolling a card sideways (issue 54).
TABLES_CUT = """() => [...document.querySelectorAll("table")]
  .filter(table => table.offsetParent !== null)
  .map(table => {
    let box = table.parentElement;
    while (box && box !== document.body && !["auto", "scroll", "hidden"].includes(
      getComputedStyle(box).overflowX)) box = box.parentElement;
    if (!box || box === document.body) return null;
    return box.scrollWidth > box.clientWidth + 1
      ? `${table.className || "table"} ${box.scrollWidth} px in ${box.clientWidth} px` : null;
  })
  .filter(Boolean)"""

# What a person reads: never a service account's .invalid address, never a raw ISO 8601 time.
UNREADABLE = r"""() => {
  // Text a person reads: not code or a payload shown as sent (pre, code), nor scripts.
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
    acceptNode: node => node.parentElement.closest("pre, code, script, style, template")
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
  });
  let text = "";
  while (walker.nextNode()) text += walker.currentNode.nodeValue + " ";
  const out = [];
  const invalid = text.match(/\S+@\S+\.invalid\b/);
  if (invalid) out.push("an .invalid address: " + invalid[0]);
  const iso = text.match(/\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?([+-]\d\d:\d\d|Z)?/);
  if (iso) out.push("a raw ISO time: " + iso[0]);
  return out;
}"""

# On a phone a label stands above its value, not in a column of its own beside it.
LABELS_BESIDE = """() => [...document.querySelectorAll("dl dt")]
  .filter(dt => dt.offsetParent !== null && dt.nextElementSibling?.tagName === "DD")
  .filter(dt => dt.nextElementSibling.getBoundingClientRect().left
    > dt.getBoundingClientRect().left + 1)
  .map(dt => dt.textContent.trim()).slice(0, 4)"""

# A fieldset left in the browser's grey groove beside the rounded cards.
DEFAULT_FIELDSETS = """() => [...document.querySelectorAll("fieldset")]
  .filter(set => set.offsetParent !== null && getComputedStyle(set).borderTopStyle === "groove")
  .map(set => (set.querySelector("legend") || set).textContent.trim().slice(0, 40))"""


def seed_service_account(owner, teammate) -> tuple:
    """A service account with a key, and a live key of `teammate` that something still uses
    (the Remove page then offers its hand-over); returns the account and the teammate's
    membership id."""
    from django.utils import timezone

    from apps.api_keys.models import ApiKey
    from apps.service_accounts.services import service_account_create, service_account_key_create
    from apps.usage.models import KeyUsageHour

    workspace = owner.memberships.get().workspace
    actor = Actor.of_user(owner)
    account = service_account_create(
        workspace=workspace,
        name="CI deploy for the marketing site",
        description="Publishes pages on every merge to main.",
        actor=actor,
    )
    service_account_key_create(
        account=account, name="Deploys", scopes=["pages:read"], expires_at=None, actor=actor
    )
    live = make_key(user=teammate, workspace=workspace, name="Nightly export to the warehouse")
    now = timezone.now()
    ApiKey.objects.filter(pk=live.key.pk).update(last_used_at=now, last_used_ip="192.0.2.10")
    hour = now.replace(minute=0, second=0, microsecond=0)
    for operation, count in (("list_pages", 120), ("get_workspace", 30)):
        KeyUsageHour.objects.create(
            key=live.key, hour=hour, operation=operation, outcome="2xx", count=count
        )
    return account, teammate.memberships.get().pk


def invitation_path(community) -> str:
    _, link = invitation_create(
        workspace=community.workspace,
        community=community,
        email="invited@example.com",
        role="member",
        actor=Actor.of_operator("test"),
        base_url="",
    )
    return link


@pytest.mark.parametrize("width", WIDTHS)
def test_no_page_scrolls_sideways(browser, live_server, shoot, width):
    owner = owner_of(email="owner@acme.test")
    workspace = owner.memberships.get().workspace
    community = make_community(workspace, "Makers with a rather long community name")
    member_of(community, email="a.member.with.a.long.address@example.com")
    # Restricted to one community and two networks: its page lists them and the narrow form
    # shows the restriction controls.
    key = make_key(
        user=owner,
        name="Zapier sync for the billing team",
        expires_in=timedelta(days=3),
        restrictions=Restrictions(
            communities=(community.pk,),
            networks=("2001:db8:1234:5678::/64", "203.0.113.0/24"),
            rate_limit_per_minute=600,
        ),
    ).key
    seed_usage(key)
    make_key(user=owner, name="CLI on laptop", tag="cli")
    # A teammate with a long address holds a key that was revoked: its page names both.
    from apps.api_keys.services import api_key_revoke
    from tests.factories import MembershipFactory, UserFactory

    long_address = "a.teammate.with.a.remarkably.long.address@subdomain.example.com"
    teammate = UserFactory(email=long_address)
    MembershipFactory(workspace=workspace, user=teammate, role="admin")
    theirs = make_key(user=teammate, workspace=workspace, name="Their key").key
    api_key_revoke(key=theirs, actor=Actor.of_user(owner))
    theirs.refresh_from_db()
    # Under the approval policy, the teammate's write key waits: the owners' list and its page.
    workspace.key_approval = "write"
    workspace.save(update_fields=["key_approval"])
    waiting = make_key(
        user=teammate,
        workspace=workspace,
        name="Spring course publisher for the marketing site",
        scopes=["pages:read", "pages:write"],
    ).key
    leaked = seed_leaked_key(owner)
    seed_requests(key, theirs, leaked)
    account, in_use = seed_service_account(owner, teammate)
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": WIDTHS[width], "height": 900}
    )
    page = context.new_page()
    page.set_default_timeout(10_000)
    csp_violations = watch_for_csp_violations(page)
    missing: list[str] = []  # a favicon or a stylesheet that 404s on every page, say
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    try:
        anonymous = {
            "sign-in": "/sign-in/",
            "sign-up": "/sign-up/",
            "password-reset": "/account/password/reset/",
            "password-reset-sent": "/account/password/reset/done/",
            "password-reset-done": "/account/password/reset/key/done/",
            "sign-in-code": "/account/login/code/",
            "invitation": invitation_path(community),
        }
        for name, path in anonymous.items():
            page.goto(path)
            shoot(page, f"{width}-{name}")
            assert page.evaluate("document.documentElement.scrollWidth") <= WIDTHS[width], name
        sign_in(page, "owner@acme.test")
        overflowing = {}
        pages = {
            **owner_pages(key.pk, community.pk, seed_webhooks(owner)),
            **seed_oauth(owner, live_server.url),
            "key-page-long-holder": f"/integrations/api/keys/{theirs.pk}/",
            "logs": "/logs/",
            "key-page-waiting": f"/integrations/api/keys/{waiting.pk}/",
            "logs-refused": "/logs/?status=4xx",
            "key-narrow": f"/integrations/api/keys/{key.pk}/",
            "key-page-leaked": f"/integrations/api/keys/{leaked.pk}/",
            "key-health": "/integrations/api/health/",
            "key-health-act": "/integrations/api/health/no-expiry/act/",
            "service-accounts": "/settings/team/service-accounts/",
            "service-account": f"/settings/team/service-accounts/{account.pk}/",
            "team-remove": f"/settings/team/{in_use}/remove/",
        }
        for name, path in pages.items():
            response = page.goto(path)
            assert response.status == 200, (name, response.status)
            if name == "webhook":  # the delivery log with one delivery's attempts open
                page.locator(".deliveries details summary").first.click()
            if name in ("logs", "key-page"):  # one request opened to its details
                page.locator(".requests details summary").first.click()
            if name == "key-narrow":  # its "Narrow by hand" form opened
                page.click("summary:has-text('Narrow by hand')")
                page.locator(".narrow-form").scroll_into_view_if_needed()
            shoot(page, f"{width}-{name}")
            scroll_width = page.evaluate("document.documentElement.scrollWidth")
            if scroll_width > WIDTHS[width]:
                overflowing[name] = scroll_width
            if out := page.evaluate(OUT_OF_BOUNDS):
                overflowing[name] = out
            if broken := page.evaluate(BROKEN_WORDS):
                overflowing[name] = f"words broken mid-word: {broken}"
            if width == "phone" and (beside := page.evaluate(LABELS_BESIDE)):
                overflowing[name] = f"labels beside their values: {beside}"
            if name == "audit" and width == "desktop":
                # Each moment on one line (it wrapped to six), and no change set in bold.
                tall = page.locator("td[data-label=When] time").evaluate_all(
                    "times => times.filter(t => t.getBoundingClientRect().height > 30).length"
                )
                bold = page.locator("td[data-label=What] strong").count()
                if tall or bold:
                    overflowing[name] = f"{tall} times on two lines or more, {bold} in bold"
            if name.startswith("logs") and (rows := page.evaluate(LOG_ROWS)):
                overflowing[name] = rows
            if dates := page.evaluate(DATE_SYSTEM):
                overflowing[name] = dates
            if cut := page.evaluate(TABLES_CUT):
                overflowing[name] = f"tables wider than their cards: {cut}"
            if unreadable := page.evaluate(UNREADABLE):
                overflowing[name] = unreadable
            if grey := page.evaluate(DEFAULT_FIELDSETS):
                overflowing[name] = f"browser-default fieldsets: {grey}"
            if wrapped := page.evaluate(CONTROLS_WRAPPED):
                overflowing[name] = f"controls wrapped inside themselves: {wrapped}"
            # The header is one line at every width (the brand never on two).
            if (tall := page.locator("header.topbar").evaluate(ONE_LINE)) > 60:
                overflowing[name] = f"header {tall:.0f} px tall"
            # Navigation pills keep their own height, however short the page.
            heights = page.locator("nav.sidenav a").evaluate_all(
                "links => links.map(link => link.getBoundingClientRect().height)"
            )
            if heights and max(heights) > 60:
                overflowing[name] = f"navigation links {max(heights):.0f} px tall"
            # Commands wrap between words ("G atehouse" was hard to read and to copy by eye).
            mid_word = page.eval_on_selector_all(
                ".snippet:not(.secret) pre",
                "pres => pres.filter(p => getComputedStyle(p).wordBreak === 'break-all').length",
            )
            assert mid_word == 0, name
        assert not overflowing, "\n".join(f"{name}: {what}" for name, what in overflowing.items())
        # Every navigation link is on screen: the navigation wraps instead of being cut off.
        boxes = page.locator("nav.sidenav a").evaluate_all(
            "links => links.map(link => link.getBoundingClientRect().right)"
        )
        assert boxes and max(boxes) <= WIDTHS[width], boxes
        assert csp_violations == []
        assert missing == []
        # Headless Chromium asks for no favicon; a browser does: every page names one that exists.
        icon = page.get_attribute("link[rel=icon]", "href")
        assert icon and page.request.get(icon).status == 200
        assert Community.objects.count() == 1
    finally:
        context.close()


# Logs: each row's ▸ sits inside the card, and its method and path share one baseline.
LOG_ROWS = """() => [...document.querySelectorAll(".request summary")].flatMap(summary => {
  const card = summary.closest(".card").getBoundingClientRect();
  const marker = getComputedStyle(summary, "::before");
  const box = summary.getBoundingClientRect();
  // An absolute marker is placed from its summary when that is positioned, else from the page.
  const from = getComputedStyle(summary).position === "static" ? 0 : box.left;
  const left = from + parseFloat(marker.left) + parseFloat(marker.marginLeft || "0");
  const out = [];
  if (marker.content !== "none" && left < card.left) out.push("▸ outside its card");
  const method = summary.querySelector(".request-what > .mono:first-child");
  const path = summary.querySelector(".clip--path");
  if (method && path) {
    const bottom = el => { const r = document.createRange(); r.selectNodeContents(el);
      const rects = [...r.getClientRects()]; return rects.length ? rects[0].bottom : 0; };
    const off = Math.abs(bottom(method) - bottom(path));
    if (off > 0.5) out.push("method and path " + off.toFixed(1) + " px off one baseline");
  }
  return out;
}).slice(0, 2)"""
