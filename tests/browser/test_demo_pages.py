"""The demo's own pages in Chromium at 1280 and 390 px, with the demo's real data (long names,
quotas, every state, addresses): no table wider than its card (at 1280 px the key table was
992 px in a 961 px card, Roll and Revoke reached by scrolling the card), no page wider than the
window, no .invalid address or raw ISO time in what a person reads."""

import io

import pytest
from django.core.management import call_command

from apps.demo.management.commands.demo import DEMO_EMAIL, DEMO_PASSWORD
from tests.browser.test_dashboard import sign_in
from tests.browser.test_every_page import TABLES_CUT, UNREADABLE, WIDTHS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_demos_pages_fit_and_read_well(browser, live_server, settings, tmp_path, width):
    settings.DEBUG = True
    settings.DEMO_KEY_FILE = str(tmp_path / "demo-key")
    call_command("demo", "--base-url", live_server.url, stdout=io.StringIO())
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": WIDTHS[width], "height": 900}
    )
    page = context.new_page()
    try:
        sign_in(page, DEMO_EMAIL, DEMO_PASSWORD)
        paths = page.eval_on_selector_all(
            "nav.sidenav a", "links => links.map(link => link.getAttribute('href'))"
        )
        paths += ["/integrations/api/?state=all", "/logs/?status=4xx"]
        problems = {}
        for path in dict.fromkeys(paths):
            assert page.goto(path).status == 200, path
            found = [*page.evaluate(TABLES_CUT), *page.evaluate(UNREADABLE)]
            if page.evaluate("document.documentElement.scrollWidth") > WIDTHS[width]:
                found.append("wider than the window")
            if found:
                problems[path] = found
        assert not problems, problems
    finally:
        context.close()
