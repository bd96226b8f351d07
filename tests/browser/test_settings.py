"""The Settings page's time-zone search in Chromium: cities, merged cities and legacy names,
countries and abbreviations find their zone, and nothing found says so."""

import pytest

from tests.browser.test_dashboard import sign_in
from tests.factories import owner_of

pytestmark = pytest.mark.django_db(transaction=True)


def visible_zones(page, typed: str) -> set[str]:
    page.fill("input.tz-search", typed)
    return set(
        page.eval_on_selector_all(
            "#id_timezone option",
            "options => options.filter(o => !o.hidden && !o.parentElement.hidden)"
            ".map(o => o.value)",
        )
    )


def test_the_time_zone_search_finds_cities_countries_aliases_and_abbreviations(page, live_server):
    owner = owner_of(email="owner@acme.test")
    workspace = owner.memberships.get().workspace
    workspace.timezone = "UTC"
    workspace.save(update_fields=["timezone"])
    sign_in(page, "owner@acme.test")
    page.goto("/settings/")
    assert "Europe/Berlin" in visible_zones(page, "Stockholm")  # a city merged into Berlin
    assert "Europe/Brussels" in visible_zones(page, "amsterdam")
    assert "Asia/Kolkata" in visible_zones(page, "Calcutta")  # a legacy name
    assert "Asia/Kolkata" in visible_zones(page, "india")  # a country
    est = visible_zones(page, "EST")
    assert "America/New_York" in est and "Europe/Berlin" not in est
    assert "Europe/Bucharest" not in est  # words start with what is typed
    assert page.locator("#id_timezone-none").is_hidden()
    assert visible_zones(page, "Atlantis") == {"UTC"}  # only the chosen zone stays
    assert page.locator("#id_timezone-none").is_visible()
    page.select_option("#id_timezone", "UTC")
    page.fill("input.tz-search", "")
    page.select_option("#id_timezone", "Europe/Berlin")
    page.click("button:has-text('Save')")
    workspace.refresh_from_db()
    assert workspace.timezone == "Europe/Berlin"
