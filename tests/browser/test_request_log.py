"""A key's requests in Chromium: calls made through the API and MCP appear on the key's page,
newest first, each with the Request-Id its answer carried; a row opens to its details; the
outcome filter and Logs' search by request id find the refused one."""

import pytest
import requests
from playwright.sync_api import expect

from tests.browser.test_dashboard import sign_in
from tests.factories import make_key, owner_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_key_page_shows_each_request_with_the_id_its_answer_carried(browser, live_server):
    owner = owner_of(email="owner@acme.test")
    key = make_key(user=owner, scopes=["pages:read"], name="Nightly sync")
    headers = {"Authorization": f"Bearer {key.secret}"}
    url = live_server.url
    answers = [
        requests.get(f"{url}/api/v1/workspace?debug=1", headers=headers, timeout=10),
        requests.get(f"{url}/api/v1/products", headers=headers, timeout=10),  # 403
        requests.post(
            f"{url}/mcp",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "get_workspace", "arguments": {}},
            },
            headers={**headers, "Accept": "application/json, text/event-stream"},
            timeout=10,
        ),
    ]
    ids = [answer.headers["Request-Id"] for answer in answers]
    page = browser.new_context(base_url=url).new_page()
    sign_in(page, "owner@acme.test")
    page.goto(f"/integrations/api/keys/{key.key.pk}/")
    shown = page.locator("#requests [data-request-id]").evaluate_all(
        "rows => rows.map(row => row.dataset.requestId)"
    )
    assert shown == ids[::-1]
    newest = page.locator(f'[data-request-id="{ids[2]}"]')
    assert "get_workspace" in newest.locator("summary").inner_text()
    newest.locator("summary").click()
    assert ids[2] in newest.locator("dl").inner_text()
    assert "?debug" not in page.content()

    page.click("text=Refused or invalid")
    refused = page.locator("#requests [data-request-id]").evaluate_all(
        "rows => rows.map(row => row.dataset.requestId)"
    )
    assert refused == [ids[1]]

    page.click("text=Open in Logs")
    page.fill("input[name=q]", ids[1])
    page.click("button:has-text('Filter')")
    found = page.locator("[data-request-id]").evaluate_all(
        "rows => rows.map(row => row.dataset.requestId)"
    )
    assert found == [ids[1]]
    row = page.locator(f'[data-request-id="{ids[1]}"]')
    assert "insufficient-scope" in row.inner_text()
    # The row it found is opened to its details, and the field shows the whole id.
    expect(row.locator(".request-panel")).to_be_visible()
    assert row.locator(".request-panel h3").inner_text().startswith("GET /api/v1/products")
    field = page.locator("input[name=q]")
    widths = field.evaluate("input => [input.scrollWidth, input.clientWidth]")
    assert widths[0] <= widths[1], widths
    expect(page.locator(".requests-head")).to_contain_text("Duration")


def test_revoking_from_the_keys_page_asks_in_the_same_dialog_and_stays_there(browser, live_server):
    owner = owner_of(email="owner@acme.test")
    key = make_key(user=owner, scopes=["pages:read"], name="Build bot")
    answer = requests.get(
        f"{live_server.url}/api/v1/workspace",
        headers={"Authorization": f"Bearer {key.secret}"},
        timeout=10,
    )
    page = browser.new_context(base_url=live_server.url).new_page()
    sign_in(page, "owner@acme.test")
    page.goto(f"/integrations/api/keys/{key.key.pk}/")
    page.locator(".page-head").get_by_role("button", name="Revoke").click()
    dialog = page.locator("#confirm-dialog")
    assert dialog.locator("h2").text_content() == f"Revoke “Build bot” ({key.key.hint})?"
    dialog.get_by_role("button", name="Revoke key").click()
    page.wait_for_url(f"**/integrations/api/keys/{key.key.pk}/")
    assert "Revoked “Build bot”" in page.text_content(".flashes")
    radius = page.locator('[data-testid="blast-radius"]')
    assert "1 request" in radius.inner_text()
    assert answer.headers["Request-Id"] in page.locator("#requests").inner_html()
