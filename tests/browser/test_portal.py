import pytest
import requests

from tests.factories import PASSWORD, make_community, member_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_member_creates_uses_and_revokes_a_member_key(page, live_server, shoot):
    community = make_community(name="Makers")
    member_of(community, email="maker@example.com")

    page.goto("/sign-in/")
    page.fill("input[name=login]", "maker@example.com")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/portal/")
    assert "Makers" in page.text_content("main")
    assert page.locator("nav >> text=Audit").count() == 0  # the owners' pages are not here
    shoot(page, "20-portal-home")

    page.click("nav >> text=Your API keys")
    page.click("text=Create your first key")
    page.wait_for_selector("input[name=name]")  # the form is there before counting what it lacks
    assert page.locator("input[name=access_products]").count() == 0
    page.fill("input[name=name]", "My script")
    page.click("label.segment:has(input[name=access_communities][value=read])")
    page.click("button:has-text('Create key')")
    secret = page.text_content("[data-testid=new-secret]").strip()
    assert secret.startswith("gmk_")
    shoot(page, "21-portal-secret-once")

    headers = {"Authorization": f"Bearer {secret}"}
    response = requests.get(f"{live_server.url}/api/v1/communities", headers=headers, timeout=10)
    assert response.status_code == 200
    assert [c["name"] for c in response.json()["data"]] == ["Makers"]
    assert (
        requests.get(f"{live_server.url}/api/v1/workspace", headers=headers, timeout=10).status_code
        == 403
    )

    page.click("text=Done, back to the keys")
    row = page.locator("tr", has_text="My script")
    row.locator("summary").click()  # the row's actions menu (⋯)
    row.locator("button:has-text('Revoke')").click()
    page.locator("dialog#confirm-dialog").get_by_role("button", name="Revoke key").click()
    page.locator("tr", has_text="My script").locator(".badge--revoked").wait_for()
    shoot(page, "22-portal-revoked")
    response = requests.get(f"{live_server.url}/api/v1/communities", headers=headers, timeout=10)
    assert response.status_code == 401
    assert response.json()["error"] == "revoked-key"
