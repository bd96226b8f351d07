"""The one rule for every name (docs/product.md §3.3), through the API and in the code."""

import re
import sys
import unicodedata

import pytest

from apps.api.schemas import NAME_FORBIDDEN_RANGES, single_line_text
from apps.common.validation import NAME_FORBIDDEN_CATEGORIES, InvalidInput, clean_text
from tests.conftest import auth
from tests.factories import WorkspaceFactory, make_key, owner_of

REFUSED = {
    "right-to-left override": "Invoice\u202egpj.exe",
    "zero-width space only": "\u200b\u200b",
    "zero-width joiner inside": "Ac\u200dme",
    "line separator inside": "Acme\u2028Academy",
    "paragraph separator inside": "Acme\u2029Academy",
    "byte order mark": "\ufeffAcme",
    "tab inside": "Acme\tAcademy",
    "private use": "Acme \ue000",
}
TRIMMED = {
    "leading tab": ("\tAcme", "Acme"),
    "trailing newline": ("Acme\n", "Acme"),
    "both, with a no-break space": ("\u00a0 Acme Academy \r\n", "Acme Academy"),
    "line separator around": ("\u2028Acme\u2028", "Acme"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("name", REFUSED.values(), ids=REFUSED.keys())
def test_the_api_refuses_invisible_and_control_characters_in_names(client, name):
    workspace = WorkspaceFactory(name="Before")
    key = make_key(
        user=owner_of(workspace), workspace=workspace, scopes=["products:write", "pages:write"]
    )
    for path, body in [
        ("/api/v1/workspace", {"workspaceName": name}),
        ("/api/v1/products", {"name": name, "priceCents": 100}),
        ("/api/v1/pages", {"title": name, "slug": "a-page", "body": ""}),
    ]:
        method = client.patch if path == "/api/v1/workspace" else client.post
        response = method(path, body, content_type="application/json", **auth(key.secret))
        assert response.status_code == 400, (path, response.json())
        assert "invisible formatting" in response.json()["message"]
    workspace.refresh_from_db()
    assert workspace.name == "Before"


@pytest.mark.django_db
@pytest.mark.parametrize(("sent", "stored"), TRIMMED.values(), ids=TRIMMED.keys())
def test_the_api_trims_surrounding_whitespace_of_names(client, sent, stored):
    workspace = WorkspaceFactory(name="Before")
    key = make_key(user=owner_of(workspace), workspace=workspace, scopes=["products:write"])
    response = client.patch(
        "/api/v1/workspace", {"workspaceName": sent}, "application/json", **auth(key.secret)
    )
    assert response.status_code == 200, response.json()
    assert response.json()["workspaceName"] == stored
    created = client.post(
        "/api/v1/products", {"name": sent, "priceCents": 1}, "application/json", **auth(key.secret)
    )
    assert created.json()["name"] == stored


def test_the_documented_pattern_says_what_the_code_does():
    pattern = re.compile(single_line_text(100)["pattern"])
    samples = [*REFUSED.values(), *(sent for sent, _ in TRIMMED.values())]
    samples += ["a", "🦊" * 100, "🦊" * 101, " ", "", "\u00e9t\u00e9", "a\u0301"]
    for sample in samples:
        try:
            clean_text(sample, "name", max_length=100)
            accepted = True
        except InvalidInput:
            accepted = False
        assert bool(pattern.match(sample)) == accepted, repr(sample)


def test_the_forbidden_ranges_are_those_of_the_forbidden_categories():
    expected, start = [], None
    for code_point in range(sys.maxunicode + 2):
        bad = (
            code_point <= sys.maxunicode
            and unicodedata.category(chr(code_point)) in NAME_FORBIDDEN_CATEGORIES
        )
        if bad and start is None:
            start = code_point
        elif not bad and start is not None:
            expected.append((start, code_point - 1))
            start = None
    assert list(NAME_FORBIDDEN_RANGES) == expected
