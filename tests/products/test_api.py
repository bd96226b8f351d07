import json

import pytest

from apps.products.models import Product
from tests.conftest import auth
from tests.factories import WorkspaceFactory, make_key, owner_of

pytestmark = pytest.mark.django_db
URL = "/api/v1/products"


def post(client, secret, body):
    return client.post(URL, json.dumps(body), content_type="application/json", **auth(secret))


def test_create_then_list_newest_first(client):
    created = make_key(scopes=["products:read", "products:write"])
    first = post(client, created.secret, {"name": "Course", "priceCents": 4900})
    assert first.status_code == 201
    assert first.json()["name"] == "Course"
    post(client, created.secret, {"name": "  Ebook ", "priceCents": 0})
    names = [p["name"] for p in client.get(URL, **auth(created.secret)).json()["data"]]
    assert names == ["Ebook", "Course"]


def test_list_shows_only_the_keys_workspace(client):
    mine = WorkspaceFactory()
    Product.objects.create(workspace=WorkspaceFactory(), name="Theirs", price_cents=1)
    Product.objects.create(workspace=mine, name="Mine", price_cents=1)
    created = make_key(user=owner_of(mine), workspace=mine, scopes=["products:read"])
    assert [p["name"] for p in client.get(URL, **auth(created.secret)).json()["data"]] == ["Mine"]


def test_limit_is_validated(client):
    created = make_key(scopes=["products:read"])
    assert client.get(URL + "?limit=1", **auth(created.secret)).status_code == 200
    for bad in ["0", "101", "abc", "-1", "1.5"]:
        response = client.get(f"{URL}?limit={bad}", **auth(created.secret))
        assert response.status_code == 400
        assert "limit" in response.json()["message"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"name": "x"}, "priceCents"),
        ({"priceCents": 1}, "name"),
        ({"name": "x", "priceCents": -1}, "priceCents"),
        ({"name": "x", "priceCents": "10"}, "priceCents"),
        ({"name": "x", "priceCents": True}, "priceCents"),
        ({"name": "x", "priceCents": 1.5}, "priceCents"),
        ({"name": "", "priceCents": 1}, "name"),
        ({"name": "x", "priceCents": 1, "currency": "EUR"}, "currency"),
        ([], "body"),
    ],
)
def test_invalid_product_is_refused_and_not_saved(client, body, field):
    created = make_key(scopes=["products:write"])
    response = post(client, created.secret, body)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid-input"
    assert field in response.json()["message"]
    assert not Product.objects.exists()


def test_read_scope_cannot_create_and_write_scope_cannot_list(client):
    reader = make_key(scopes=["products:read"])
    writer = make_key(scopes=["products:write"])
    assert post(client, reader.secret, {"name": "x", "priceCents": 1}).status_code == 403
    assert client.get(URL, **auth(writer.secret)).status_code == 403
