from typing import Any
from uuid import UUID

from django.apps import AppConfig
from django.db.models import QuerySet


class ProductsConfig(AppConfig):
    name = "apps.products"
    label = "products"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.api_keys.choosable import ChoosableGroup, register_choosable

        from .models import Product

        def objects(workspace_id: UUID, member_id: int | None) -> QuerySet[Any]:
            return Product.objects.filter(workspace_id=workspace_id)

        register_choosable(ChoosableGroup("products", "products.Product", objects, noun="product"))
