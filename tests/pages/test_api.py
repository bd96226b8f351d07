import json

import pytest

from apps.pages.models import Page
from tests.conftest import auth
from tests.factories import WorkspaceFactory, make_key, owner_of

pytestmark = pytest.mark.django_db
URL = "/api/v1/pages"


def post(client, secret, body):
    return client.post(URL, json.dumps(body), content_type="application/json", **auth(secret))


def test_create_and_list_pages_of_the_workspace_only(client):
    Page.objects.create(workspace=WorkspaceFactory(), title="Theirs", slug="theirs")
    created = make_key(scopes=["pages:read", "pages:write"])
    response = post(client, created.secret, {"title": "About us", "slug": "about-us", "body": ""})
    assert response.status_code == 201
    assert response.json()["slug"] == "about-us"
    titles = [p["title"] for p in client.get(URL, **auth(created.secret)).json()["data"]]
    assert titles == ["About us"]


def test_a_used_slug_is_refused_but_free_in_another_workspace(client):
    first = make_key(scopes=["pages:write"])
    assert post(client, first.secret, {"title": "A", "slug": "home", "body": ""}).status_code == 201
    again = post(client, first.secret, {"title": "B", "slug": "home", "body": ""})
    assert again.status_code == 400
    assert "slug" in again.json()["message"]
    other = make_key(user=owner_of(WorkspaceFactory()), scopes=["pages:write"])
    assert post(client, other.secret, {"title": "A", "slug": "home", "body": ""}).status_code == 201


@pytest.mark.parametrize("slug", ["", "Home", "two--hyphens", "-edge", "space d", "x" * 101, 7])
def test_bad_slugs_are_refused(client, slug):
    created = make_key(scopes=["pages:write"])
    response = post(client, created.secret, {"title": "A", "slug": slug, "body": ""})
    assert response.status_code == 400
    assert "slug" in response.json()["message"]
    assert not Page.objects.exists()
