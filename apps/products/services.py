from typing import Any

from apps.common.validation import InvalidInput, clean_text
from apps.workspaces.models import Workspace

from .models import Product

MAX_PRICE_CENTS = 100_000_000


def clean_price_cents(value: Any, field: str = "priceCents") -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON does not tell 100 from 100.0
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(field, f"{field} must be a whole number of cents.")
    if not 0 <= value <= MAX_PRICE_CENTS:
        raise InvalidInput(field, f"{field} must be between 0 and {MAX_PRICE_CENTS}.")
    return value


def product_create(*, workspace: Workspace, name: Any, price_cents: Any) -> Product:
    """Create a product; raises InvalidInput naming the first bad field."""
    return Product.objects.create(
        workspace=workspace,
        name=clean_text(name, "name", max_length=200),
        price_cents=clean_price_cents(price_cents),
    )
