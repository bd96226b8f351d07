"""What `python3 dev.py run` does, in its order: migrate, `manage.py demo`, then a development
server with no Redis (its cache in its own memory). The refusals the demo counted were in the
demo command's memory: the server's key pages still show them."""

import csv
import http.cookiejar
import io
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from apps.demo.management.commands.demo import DEMO_EMAIL, DEMO_PASSWORD

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_development_servers_key_pages_count_the_demos_refusals(tmp_path):
    env = dict(
        os.environ,
        DATABASE_URL=f"sqlite:///{tmp_path}/dev.sqlite3",
        DEBUG="true",
        REDIS_URL="",
        DEMO_KEY_FILE=str(tmp_path / "demo-key"),
    )
    manage = [sys.executable, "manage.py"]
    for step in (["migrate", "--noinput", "-v0"], ["demo"]):
        subprocess.run([*manage, *step], cwd=ROOT, env=env, check=True, capture_output=True)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "server.log"
    with open(log, "w") as out:
        server = subprocess.Popen(
            [*manage, "runserver", "--noreload", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            jar = http.cookiejar.CookieJar()
            browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
            deadline = time.monotonic() + 90  # a loaded CI machine took over 15 s once
            while True:
                try:
                    browser.open(f"{base}/sign-in/", timeout=5)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        pytest.fail(f"the server did not answer: {log.read_text()}")
                    time.sleep(0.1)
            token = next(cookie.value for cookie in jar if cookie.name == "csrftoken")
            form = {"login": DEMO_EMAIL, "password": DEMO_PASSWORD, "csrfmiddlewaretoken": token}
            browser.open(
                urllib.request.Request(
                    f"{base}/sign-in/",
                    data=urllib.parse.urlencode(form).encode(),
                    headers={"Referer": f"{base}/sign-in/"},
                ),
                timeout=10,
            )
            listing = browser.open(f"{base}/integrations/api/", timeout=10).read().decode()
            zapier = re.search(r'<tr id="key-(\d+)"(?:(?!</tr>).)*>Zapier sync</a>', listing, re.S)
            assert zapier, "not signed in, or no Zapier key"
            page = browser.open(f"{base}/integrations/api/keys/{zapier.group(1)}/").read()
            since = datetime.now(UTC) - timedelta(hours=24)
            export = browser.open(f"{base}/logs/export.csv?key={zapier.group(1)}").read()
        finally:
            server.terminate()
            server.wait(30)
    shown = re.search(r'data-testid="refusals">(.*?)</dd>', page.decode(), re.S).group(1)
    counted = {
        reason: int(n) for n, reason in re.findall(r'(\d+) × <span class="mono">([^<]+)<', shown)
    }
    rows = csv.DictReader(io.StringIO(export.decode()))
    refused = Counter(
        row["error"]
        for row in rows
        if row["status"] in ("401", "403", "429")
        and datetime.fromisoformat(row["time_utc"].replace("Z", "+00:00")) >= since
    )
    assert refused and counted == dict(refused)
