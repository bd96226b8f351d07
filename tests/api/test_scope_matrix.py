"""Every endpoint × every scope × workspace key and member key: exactly 2xx or 403."""

import json
import re

import pytest

from apps.api.scopes import ALL_SCOPES, MEMBER_SCOPES
from apps.api_keys.models import ApiKey
from apps.common.validation import InvalidInput
from tests.conftest import auth
from tests.factories import make_community, make_key, member_of, owner_of

pytestmark = pytest.mark.django_db

# (method, path, body, the scopes that open it; None means any workspace key)
ENDPOINTS = [
    ("GET", "/api/v1/workspace", None, None),
    (
        "PATCH",
        "/api/v1/workspace",
        {"timezone": "UTC"},
        {"products:write", "communities:write", "pages:write"},
    ),
    ("GET", "/api/v1/products", None, {"products:read"}),
    ("POST", "/api/v1/products", {"name": "Course", "priceCents": 100}, {"products:write"}),
    ("GET", "/api/v1/communities", None, {"communities:read"}),
    ("GET", "/api/v1/communities/{community}/posts", None, {"communities:read"}),
    (
        "POST",
        "/api/v1/communities/{community}/posts",
        {"title": "Hi", "body": "Hello"},
        {"communities:write"},
    ),
    ("GET", "/api/v1/pages", None, {"pages:read"}),
    ("POST", "/api/v1/pages", {"title": "About", "slug": "about", "body": ""}, {"pages:write"}),
]
WORKSPACE_ENDPOINTS = {"/api/v1/workspace", "/api/v1/products", "/api/v1/pages"}


def call(client, method, path, body, secret, community):
    url = path.format(community=community.pk)
    if body is None:
        return client.generic(method, url, **auth(secret))
    return client.generic(
        method, url, json.dumps(body), content_type="application/json", **auth(secret)
    )


def assert_forbidden(response, scopes_needed):
    """403 insufficient-scope whose WWW-Authenticate names exactly the scopes that would open
    the endpoint (all of them when any workspace key would do)."""
    assert response.status_code == 403, response.content
    assert response.json()["error"] == "insufficient-scope"
    challenge = response["WWW-Authenticate"]
    assert 'error="insufficient_scope"' in challenge
    named = re.search(r'scope="([^"]*)"', challenge).group(1).split()
    assert sorted(named) == sorted(scopes_needed or ALL_SCOPES), challenge


@pytest.mark.parametrize(
    "method, path, body, needed", ENDPOINTS, ids=[f"{m} {p}" for m, p, _, _ in ENDPOINTS]
)
@pytest.mark.parametrize("scope", ALL_SCOPES)
def test_workspace_key(client, method, path, body, needed, scope):
    community = make_community()
    created = make_key(
        user=owner_of(community.workspace), workspace=community.workspace, scopes=[scope]
    )
    response = call(client, method, path, body, created.secret, community)
    if needed is None or scope in needed:
        assert response.status_code in (200, 201), response.content
    else:
        assert_forbidden(response, needed)


@pytest.mark.parametrize(
    "method, path, body, needed", ENDPOINTS, ids=[f"{m} {p}" for m, p, _, _ in ENDPOINTS]
)
@pytest.mark.parametrize("scope", MEMBER_SCOPES)
def test_member_key(client, method, path, body, needed, scope):
    community = make_community()
    member = member_of(community)
    created = make_key(
        user=member, workspace=community.workspace, scopes=[scope], kind=ApiKey.Kind.MEMBER
    )
    response = call(client, method, path, body, created.secret, community)
    if path in WORKSPACE_ENDPOINTS:
        assert_forbidden(response, needed)
    elif scope in needed:
        assert response.status_code in (200, 201), response.content
    else:
        assert_forbidden(response, needed)


@pytest.mark.parametrize("scope", sorted(set(ALL_SCOPES) - set(MEMBER_SCOPES)))
def test_member_keys_cannot_hold_workspace_scopes(scope):
    member = member_of(make_community())
    with pytest.raises(InvalidInput):
        make_key(
            user=member,
            workspace=member.memberships.get().workspace,
            scopes=[scope],
            kind=ApiKey.Kind.MEMBER,
        )
    assert not ApiKey.objects.exists()
