from django.apps import AppConfig


class ApiKeysConfig(AppConfig):
    name = "apps.api_keys"
    label = "api_keys"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401 - registers the system checks
