"""Nothing shaped like a Gatehouse secret reaches a log line: a key pasted into a URL path (in
Django's "Not Found" warning and gunicorn's access line), into a query, or into an exception's
message; and the Referer is logged without its query (`/device?user_code=…`)."""

import io
import logging
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from apps.common.logging import RedactSecrets, redact
from tests.common.test_logging import ROOT, _free_port

SECRET = "gwk_" + "Q" * 32 + "000000"
MEMBER = "gmk_" + "R" * 32 + "111111"
REFRESH = "grt_" + "S" * 32 + "222222"
SIGNING = "whsec_" + "dGVzdA+/" * 5 + "=="
SCIM = "gst_" + "T" * 32 + "333333"
EVERY_SECRET = (SECRET, MEMBER, REFRESH, SIGNING, SCIM)
REFERER = "http://127.0.0.1/device?user_code=WDJB-MJHT#frag"


@pytest.mark.parametrize("secret", EVERY_SECRET)
def test_every_kind_of_secret_is_removed_and_a_hint_is_kept(secret):
    text = redact(f"GET /api/v1/keys/{secret}/x key gwk_…QQ00 {secret[:12]}")
    assert secret not in text and secret[:12] not in text
    assert f"{secret.partition('_')[0]}_[removed]" in text
    assert "gwk_…QQ00" in text


def test_every_handler_of_every_logger_redacts():
    for name, handler in settings.LOGGING["handlers"].items():
        assert "redact_secrets" in handler.get("filters", ()), name
    loggers = [logging.getLogger(), *map(logging.getLogger, logging.root.manager.loggerDict)]
    configured = [
        (logger.name, handler)
        for logger in loggers
        for handler in getattr(logger, "handlers", ())
        # pytest's own capture, and libraries' NullHandlers, which write nothing
        if not type(handler).__module__.startswith("_pytest")
        and not isinstance(handler, logging.NullHandler)
    ]
    assert len(configured) >= 2  # the root's console and the development server's
    for name, handler in configured:
        assert any(isinstance(f, RedactSecrets) for f in handler.filters), (name, handler)


@pytest.fixture
def console():
    """What the configured console handler writes, while the test runs."""
    handler = next(h for h in logging.getLogger().handlers if type(h) is logging.StreamHandler)
    written = io.StringIO()
    previous = handler.setStream(written)
    yield written
    handler.setStream(previous)


@pytest.mark.django_db
def test_djangos_not_found_warning_names_the_path_without_the_key(client, console):
    for path in (f"/api/v1/keys/{SECRET}", f"/integrations/api/keys/{MEMBER}/", f"/x/{SIGNING}"):
        client.get(path, HTTP_REFERER=REFERER)
    text = console.getvalue()
    assert "Not Found: /api/v1/keys/gwk_[removed]" in text
    assert "Not Found: /integrations/api/keys/gmk_[removed]/" in text
    assert all(secret not in text for secret in EVERY_SECRET)


def test_a_traceback_holding_a_secret_is_logged_without_it(console):
    try:
        raise ValueError(f"refused {REFRESH}")
    except ValueError:
        logging.getLogger("apps.anything").exception("while reading %s", SECRET)
    text = console.getvalue()
    assert "while reading gwk_[removed]" in text and "ValueError: refused grt_[removed]" in text
    assert SECRET not in text and REFRESH not in text


def test_gunicorn_logs_no_secret_and_no_referer_query(tmp_path):
    port = _free_port()
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    access, errors, django = tmp_path / "access.log", tmp_path / "error.log", tmp_path / "out"
    command = [
        gunicorn, "config.wsgi", "-b", f"127.0.0.1:{port}",
        "--access-logfile", str(access), "--error-logfile", str(errors),
    ]  # fmt: skip
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3", DEBUG="true")
    with open(django, "w") as out:  # Django's console handler writes to stderr
        server = subprocess.Popen(command, cwd=ROOT, env=env, stderr=out)
    try:
        paths = [f"/api/v1/keys/{SECRET}", f"/api/v1/keys/{MEMBER}?x={REFRESH}", f"/{SIGNING}"]
        for _attempt in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
                break
            except urllib.error.HTTPError:
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("the server did not start")
        for path in paths:
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}{path}", headers={"Referer": REFERER}
            )
            with pytest.raises(urllib.error.HTTPError):
                urllib.request.urlopen(request, timeout=5)
        # Wait for the lines asserted below, not a fixed moment (a loaded CI writes later).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (
            not access.exists() or access.read_text().count("\n") < 1 + len(paths)
        ):
            time.sleep(0.1)
    finally:
        server.terminate()
        try:
            server.wait(60)  # a graceful stop waits for workers still starting under load
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
    logged = access.read_text()
    assert logged.count('"GET /api/v1/keys/gwk_[removed] HTTP/1.1" 404') == 1, logged
    assert '"GET /api/v1/keys/gmk_[removed] HTTP/1.1" 404' in logged
    assert '"http://127.0.0.1/device"' in logged and "user_code" not in logged
    everything = logged + errors.read_text() + django.read_text()
    assert "Not Found: /api/v1/keys/gwk_[removed]" in everything
    assert all(secret not in everything for secret in EVERY_SECRET), everything
