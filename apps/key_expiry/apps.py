from datetime import timedelta

from django.apps import AppConfig


class KeyExpiryConfig(AppConfig):
    name = "apps.key_expiry"
    label = "key_expiry"
    verbose_name = "Key expiry notices"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.jobs.schedule import register_job

        from .notices import api_key_expiry_job

        register_job("expiry-notices", timedelta(hours=1), api_key_expiry_job)
