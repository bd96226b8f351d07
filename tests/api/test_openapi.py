import json
import re

import pytest
from django.urls import URLPattern, get_resolver

from config.openapi import OAUTH_OPENAPI_FILE, OPENAPI_FILE, build_oauth_openapi, build_openapi


def test_committed_document_matches_the_code():
    """Run `manage.py openapi --write` after changing the API, and commit the result."""
    assert json.loads(OPENAPI_FILE.read_text()) == build_openapi()
    assert json.loads(OAUTH_OPENAPI_FILE.read_text()) == build_oauth_openapi()


@pytest.mark.django_db
def test_the_authorization_servers_document_is_served_at_the_origin(client):
    response = client.get("/oauth/openapi.json")
    assert response.status_code == 200
    document = response.json()
    assert document["servers"] == [{"url": "/"}]
    assert "/oauth/token" in document["paths"]


def test_the_api_document_holds_only_the_api():
    """A generated client puts every path under the document's `servers` (/api/v1); the
    OAuth endpoints live at the origin, in their own document."""
    assert not [p for p in build_openapi()["paths"] if p.startswith("/oauth/")]
    assert not [p for p, entry in build_openapi()["paths"].items() if "servers" in entry]


def _mangled(value: object) -> str:
    """An enum value as client generators name its member: GMT+0 and GMT-0 both GMT_0."""
    words = re.sub(r"[^0-9a-zA-Z]+", "_", str(value)).strip("_")
    return words.upper() or "EMPTY"


def test_every_enum_is_unique_after_a_generators_naming():
    enums: list[list[object]] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("enum"), list):
                enums.append(node["enum"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(build_openapi())
    walk(build_oauth_openapi())
    assert enums
    for values in enums:
        names = [_mangled(v) for v in values]
        assert len(names) == len(set(names)), values


def test_a_time_zone_is_a_described_string_not_a_list_of_names():
    patch = build_openapi()["components"]["schemas"]["WorkspacePatch"]["properties"]["timezone"]
    assert patch["type"] == "string" and "enum" not in patch
    assert "Europe/Berlin" in patch["examples"] and "iana.org" in patch["description"]


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
    assert routes == described
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
    oauth_routes.discard("/oauth/openapi.json")
    assert set(build_oauth_openapi()["paths"]) == oauth_routes - pages


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
    walk(json.loads(OAUTH_OPENAPI_FILE.read_text()))
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
