"""Products: list_products and create_product (GET and POST /products)."""

from typing import Any

from apps.api.collections import collection_operations
from apps.api.http import iso_time
from apps.api.operations import Call, body_fields, object_schema
from apps.api.schemas import date_time, single_line_text
from apps.api_keys.choosable import limited_to_key, note_reached

from .models import Product
from .services import MAX_PRICE_CENTS, product_create


def product_to_json(product: Product) -> dict[str, Any]:
    return {
        "id": product.pk,
        "name": product.name,
        "priceCents": product.price_cents,
        "createdAt": iso_time(product.created_at),
    }


PRODUCT = object_schema(
    {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "priceCents": {"type": "integer", "minimum": 0},
        "createdAt": date_time(),
    }
)
PRODUCT_CREATE = object_schema(
    {
        "name": single_line_text(200),
        "priceCents": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_PRICE_CENTS,
            "description": "The price in cents (1999 is 19.99).",
        },
    }
)


def _list(call: Call, params: dict[str, int], body: Any) -> dict[str, Any]:
    products = Product.objects.filter(workspace=call.workspace)
    shown = list(limited_to_key(products, call.key, "products")[: params["limit"]])
    note_reached(call.key, "products", [p.pk for p in shown])
    return {"data": [product_to_json(p) for p in shown]}


def _create(call: Call, params: dict[str, int], body: Any) -> dict[str, Any]:
    data = body_fields(body, PRODUCT_CREATE)
    product = product_create(
        workspace=call.workspace, name=data["name"], price_cents=data["priceCents"]
    )
    return product_to_json(product)


OPERATIONS = collection_operations(
    path="/products",
    group="products",
    item="product",
    plural="products",
    record_name="Product",
    record=PRODUCT,
    body=PRODUCT_CREATE,
    list_run=_list,
    create_run=_create,
    list_summary="List the workspace's products (courses and other things it sells), newest first.",
    create_summary="Create a product with a name and a price in cents.",
)
