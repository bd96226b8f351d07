"""LOG_FORMAT=json: every line Django and gunicorn write is one JSON object, with the request's
id, workspace and key where known, and no secret in any of them (the sweep of
tests/common/test_log_redaction.py, over JSON lines)."""

import io
import json
import logging
import secrets

import pytest

from apps.common.logging import JsonLines, RedactSecrets, request_context
from apps.metering.facts import RequestFacts
from config.log_settings import log_settings
from tests.common.test_log_redaction import EVERY_SECRET, SECRET, SIGNING

from .live import get, gunicorn, manage, migrated_with_a_key, server_env


def test_json_lines_carry_the_request_and_never_a_secret():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactSecrets())
    handler.setFormatter(JsonLines())
    logger = logging.getLogger("tests.json_lines")
    logger.addHandler(handler)
    facts = RequestFacts("127.0.0.1", key_id=7)
    token = request_context.set(facts)
    try:
        logger.warning("refused %s", SECRET)
        try:
            raise ValueError(f"bad {SIGNING}")
        except ValueError:
            logger.exception("failed")
    finally:
        request_context.reset(token)
        logger.removeHandler(handler)
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["message"] == "refused gwk_[removed]" and first["level"] == "WARNING"
    assert first["request_id"] == facts.request_id and first["key_id"] == 7
    assert first["logger"] == "tests.json_lines" and first["time"].endswith("Z")
    assert "ValueError: bad whsec_[removed]" in second["exception"]
    assert all(secret not in stream.getvalue() for secret in EVERY_SECRET)


def test_json_is_a_formatter_of_the_same_redacting_handler():
    plain, as_json = log_settings("INFO"), log_settings("INFO", "json")
    assert plain["handlers"]["console"]["formatter"] == "plain"
    assert as_json["handlers"]["console"]["formatter"] == "json"
    assert "redact_secrets" in as_json["handlers"]["console"]["filters"]


def test_gunicorn_and_django_write_json_lines_without_secrets(tmp_path):
    env = server_env(tmp_path, LOG_FORMAT="json", LOG_LEVEL="INFO", DEBUG="false")
    env |= {
        "SECRET_KEY": secrets.token_urlsafe(50),
        "API_KEY_HASH_SECRET": secrets.token_urlsafe(48),
    }
    env |= {"SECURE_SSL_REDIRECT": "false", "ALLOWED_HOSTS": "127.0.0.1"}
    secret = migrated_with_a_key(env)
    # Its own folder: collecting into the checkout's would rewrite files that another test
    # process's server is reading at that moment.
    env["STATIC_ROOT"] = str(tmp_path / "static")
    manage(env, "collectstatic", "--noinput")
    log = tmp_path / "server.log"
    args = ("--access-logfile", "-", "--error-logfile", "-", "--log-level", "info")
    with gunicorn(env, log, *args) as (base, _master):
        assert get(f"{base}/api/v1/keys", Authorization=f"Bearer {secret}")[0] == 403
        assert get(f"{base}/api/v1/keys/{SECRET}")[0] == 404
        assert get(f"{base}/x/{SIGNING}?api_key={SECRET}")[0] == 404
    text = log.read_text()
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    assert secret not in text and all(s not in text for s in EVERY_SECRET), text
    refused = next(line for line in lines if "insufficient-scope" in line["message"])
    assert refused["request_id"].startswith("req_")
    assert refused["key_id"] and refused["workspace_id"]
    access = [line["http"] for line in lines if line["logger"] == "gunicorn.access"]
    assert {"/api/v1/keys", "/api/v1/keys/gwk_[removed]", "/x/whsec_[removed]"} <= {
        entry["path"] for entry in access
    }
    api = [entry for entry in access if entry["path"].startswith("/api/")]
    assert len(api) == 2 and all(entry["request_id"].startswith("req_") for entry in api)
    assert any(line["logger"] == "gunicorn.error" for line in lines)  # "Booting worker", ...


@pytest.mark.parametrize("value", ["xml", "JSONL"])
def test_an_unknown_log_format_is_refused(value, monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from config.observability_settings import log_format

    monkeypatch.setenv("LOG_FORMAT", value)
    with pytest.raises(ImproperlyConfigured, match="plain or json"):
        log_format()
