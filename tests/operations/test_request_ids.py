"""Every answer carries a Request-Id its log lines carry too (issue 53, item 6): the API's,
Django's own `django.request` warning after it, OAuth's token endpoint (a failing CLI login is
found by it) and the dashboard's pages; a probe's 503 is a warning, not an error."""

import io
import json
import logging

import pytest

from apps.common.logging import JsonLines
from tests.conftest import auth
from tests.factories import make_key

pytestmark = pytest.mark.django_db


@pytest.fixture
def json_lines():
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonLines())
    loggers = [logging.getLogger(name) for name in ("django.request", "apps.operations")]
    for logger in loggers:
        logger.addHandler(handler)

    def lines() -> list[dict]:
        return [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]

    yield lines
    for logger in loggers:
        logger.removeHandler(handler)


def test_django_s_own_line_after_an_api_answer_carries_its_request_id(client, json_lines):
    created = make_key(scopes=["pages:read"])
    answer = client.get("/api/v1/pages/999999", **auth(created.secret))
    assert answer.status_code == 404
    [line] = [line for line in json_lines() if line["logger"] == "django.request"]
    assert line["request_id"] == answer["Request-Id"]


def test_a_page_and_the_token_endpoint_answer_with_a_request_id_their_lines_carry(
    client, json_lines
):
    page = client.get("/integrations/api/keys/424242/no-such-page/")
    assert page.status_code == 404 and page["Request-Id"].startswith("req_")
    [line] = [line for line in json_lines() if line["logger"] == "django.request"]
    assert line["request_id"] == page["Request-Id"]
    token = client.post("/oauth/token", {"grant_type": "nonsense"})
    assert token.status_code == 400 and token["Request-Id"].startswith("req_")
    assert token["Request-Id"] != page["Request-Id"]


def test_a_probe_s_503_is_a_warning_naming_the_failing_check(client, json_lines, settings):

    settings.REDIS_URL = "redis://127.0.0.1:9/0"  # nothing listens there
    answer = client.get("/readyz")
    assert answer.status_code == 503
    lines = json_lines()
    assert [line["level"] for line in lines if line["logger"] == "django.request"] == []
    [warning] = [line for line in lines if line["logger"] == "apps.operations"]
    assert warning["level"] == "WARNING" and "redis" in warning["message"]
