from django.apps import AppConfig


class ApiKeysConfig(AppConfig):
    name = "apps.api_keys"
    label = "api_keys"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.api.middleware import api_request_refused

        from . import checks  # noqa: F401 - registers the system checks
        from .refusals import api_key_count_refusal

        api_request_refused.connect(api_key_count_refusal, dispatch_uid="api_keys.refusals")
