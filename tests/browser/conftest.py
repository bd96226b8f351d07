"""Browser tests: a real Chromium (Debian's package) driven by Playwright against a live server.

Screenshots of every page land in the folder printed at the end of the run.
"""

import os
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = Path(os.environ.get("GATEHOUSE_SCREENSHOTS", "var/screenshots")).resolve()


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/browser" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        message = f"{CHROMIUM} is missing: apt-get install chromium chromium-driver"
        if os.environ.get("GATEHOUSE_REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)
    # Playwright's sync API runs an event loop in this thread; the ORM calls of the tests
    # themselves are still synchronous and safe.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield browser
        browser.close()


def watch_for_csp_violations(page) -> list[str]:
    """Collect every Content-Security-Policy violation the page reports on its console."""
    violations: list[str] = []

    def on_console(message) -> None:
        if "Content Security Policy" in message.text:
            violations.append(f"{page.url}: {message.text}")

    page.on("console", on_console)
    return violations


@pytest.fixture
def page(browser, live_server):
    """A page of the live server; the test fails if any page it opened broke the
    Content-Security-Policy (an inline script or style, a foreign source)."""
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    violations = watch_for_csp_violations(page)
    yield page
    context.close()
    assert violations == [], "Content-Security-Policy violations:\n" + "\n".join(violations)


@pytest.fixture
def shoot():
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def shoot(page, name: str) -> None:
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)

    return shoot


def pytest_terminal_summary(terminalreporter):
    if SCREENSHOTS.exists():
        terminalreporter.write_line(f"Browser screenshots of every page: {SCREENSHOTS}")
