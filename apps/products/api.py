"""GET and POST /api/v1/products."""

from typing import Any

from django.http import HttpRequest, JsonResponse

from apps.api.errors import api_error
from apps.api.http import BodyError, iso_time, json_object_body, methods
from apps.api.listing import list_limit
from apps.api_keys.auth import api_key_required
from apps.common.validation import InvalidInput

from .models import Product
from .services import product_create


def product_to_json(product: Product) -> dict[str, Any]:
    return {
        "id": product.pk,
        "name": product.name,
        "priceCents": product.price_cents,
        "createdAt": iso_time(product.created_at),
    }


@api_key_required(scope="products:read")
def product_list(request: HttpRequest) -> JsonResponse:
    try:
        limit = list_limit(request)
    except InvalidInput as error:
        return api_error("invalid-input", error.message)
    products = Product.objects.filter(workspace=request.workspace)[:limit]
    return JsonResponse({"data": [product_to_json(p) for p in products]})


@api_key_required(scope="products:write")
def product_post(request: HttpRequest) -> JsonResponse:
    try:
        data = json_object_body(request, fields=("name", "priceCents"))
        product = product_create(
            workspace=request.workspace, name=data["name"], price_cents=data["priceCents"]
        )
    except BodyError as error:
        return error.response
    except InvalidInput as error:
        return api_error("invalid-input", error.message)
    return JsonResponse(product_to_json(product), status=201)


products = methods(GET=product_list, POST=product_post)
