"""Take the README's picture of the demo (docs/screenshots/demo-keys.png) as a newcomer sees it
after `python3 dev.py run`: a fresh SQLite database in a temporary folder, migrated and filled
by `manage.py demo`, served by the development server, signed in as the demo's owner in
Chromium at 1280 × 900. With --all, also the demo's Usage, Logs and the pages of its Zapier,
revoked and leaked keys (demo-*.png beside it), to look at, not committed.

    .venv/bin/python scripts/demo_screenshots.py [--all] [--out docs/screenshots]
"""

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
KEY_PAGES = {"zapier": "Zapier sync", "revoked": "Old storefront", "leaked": "Newsletter importer"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--all", action="store_true")
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    args = parser.parse_args()
    out = Path(args.out)
    tmp = tempfile.mkdtemp(prefix="gatehouse-demo-")
    env = dict(
        os.environ,
        DATABASE_URL=f"sqlite:///{tmp}/demo.sqlite3",
        DEBUG="true",
        DEMO_KEY_FILE=f"{tmp}/demo-key",
    )
    manage = [sys.executable, "manage.py"]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    for step in (["migrate", "--noinput", "-v0"], ["demo", "--base-url", base]):
        done = subprocess.run(
            [*manage, *step], cwd=ROOT, env=env, check=True, capture_output=True, text=True
        )
    # The owner's e-mail and password, as the demo prints them.
    email, password = (
        re.search(rf"{label}:\s+(\S+)", done.stdout).group(1) for label in ("E-mail", "Password")
    )  # type: ignore[union-attr]
    server = subprocess.Popen(
        [*manage, "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"{base}/sign-in/", timeout=2)  # noqa: S310 - loopback
                break
            except OSError:
                time.sleep(0.1)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{base}/sign-in/")
            page.fill("input[name=login]", email)
            page.fill("input[name=password]", password)
            page.click("form[action='/sign-in/'] button[type=submit]")
            page.wait_for_url(re.compile(r".*/integrations/.*|.*/$"))
            page.goto(f"{base}/integrations/api/")
            page.screenshot(path=str(out / "demo-keys.png"))
            if args.all:
                for name, title in KEY_PAGES.items():
                    page.goto(f"{base}/integrations/api/?state=all")
                    page.get_by_role("link", name=title, exact=True).click()
                    page.screenshot(path=str(out / f"demo-key-{name}.png"), full_page=True)
                for name in ("usage", "logs"):
                    page.goto(f"{base}/{name}/")
                    page.screenshot(path=str(out / f"demo-{name}.png"), full_page=True)
            browser.close()
    finally:
        server.terminate()
        server.wait(10)
    print(f"Screenshots in {out}")


if __name__ == "__main__":
    main()
