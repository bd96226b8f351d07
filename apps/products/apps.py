from django.apps import AppConfig


class ProductsConfig(AppConfig):
    name = "apps.products"
    label = "products"
    default_auto_field = "django.db.models.BigAutoField"
