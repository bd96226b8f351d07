import json
import re

import pytest
from django.urls import URLPattern, get_resolver

from config.openapi import OPENAPI_FILE, build_openapi


def test_committed_document_matches_the_code():
    """Run `manage.py openapi --write` after changing the API, and commit the result."""
    assert json.loads(OPENAPI_FILE.read_text()) == build_openapi()


@pytest.mark.django_db
def test_document_is_served_as_json_without_a_key(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json()["openapi"].startswith("3.1")


def test_every_api_route_is_described():
    api_patterns = next(
        p for p in get_resolver().url_patterns if str(p.pattern) == "api/"
    ).url_patterns
    routes = {
        "/" + re.sub(r"<int:(\w+)>", r"{\1}", str(p.pattern).removeprefix("v1/"))
        for p in api_patterns
        if isinstance(p, URLPattern) and str(p.pattern).startswith("v1/")
    }
    routes.discard("/openapi.json")
    described = set(build_openapi()["paths"])
    assert routes == {p for p in described if not p.startswith("/oauth/")}
    oauth_routes = {
        "/" + str(p.pattern)
        for p in get_resolver().url_patterns
        if isinstance(p, URLPattern) and str(p.pattern).startswith("oauth/")
    } | {
        "/" + str(p.pattern)
        for include in get_resolver().url_patterns
        if not isinstance(include, URLPattern)
        for p in include.url_patterns
        if str(p.pattern).startswith("oauth/")
    }
    assert oauth_routes >= {"/oauth/device/code", "/oauth/token", "/oauth/revoke"}
    pages = {"/oauth/authorize"}  # the consent page: for people, like /device
    assert {p for p in described if p.startswith("/oauth/")} == oauth_routes - pages


def test_every_pattern_in_the_document_compiles_in_the_fuzzers_regex_engine():
    """A pattern the Rust engine cannot compile is dropped by the fuzzer, which then sends
    values the API rightly refuses (an empty name, say) and reports them as failures."""
    import json
    import re

    import jsonschema_rs

    from config.openapi import OPENAPI_FILE

    patterns = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                patterns.append(node["pattern"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(OPENAPI_FILE.read_text()))
    assert len(patterns) >= 6
    for pattern in patterns:
        re.compile(pattern)
        jsonschema_rs.Draft202012Validator({"pattern": pattern})


def test_the_document_states_this_servers_limits(settings):
    settings.API_MAX_BODY_BYTES = 1_024
    settings.API_RATE_LIMIT_PER_MINUTE = 50
    responses = build_openapi()["components"]["responses"]
    assert "1,024 bytes" in responses["PayloadTooLarge"]["description"]
    assert "50 requests a minute" in responses["RateLimited"]["description"]


def test_the_clis_command_table_matches_the_code():
    """Run `manage.py openapi --write` after changing an operation, and commit both files."""
    from config.cli_table import CLI_TABLE_FILE, build_cli_table

    assert json.loads(CLI_TABLE_FILE.read_text()) == build_cli_table()
