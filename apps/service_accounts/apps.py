from django.apps import AppConfig


class ServiceAccountsConfig(AppConfig):
    name = "apps.service_accounts"
    label = "service_accounts"
    verbose_name = "Service accounts"
    default_auto_field = "django.db.models.BigAutoField"
