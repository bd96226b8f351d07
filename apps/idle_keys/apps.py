from datetime import timedelta

from django.apps import AppConfig


class IdleKeysConfig(AppConfig):
    name = "apps.idle_keys"
    label = "idle_keys"
    verbose_name = "Idle keys"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.jobs.schedule import register_job

        from .sweep import idle_keys_job

        # Daily in effect: a warning and a revocation are each once per key and idle spell, so
        # running it hourly only makes both land within the hour they fall due.
        register_job("idle-keys", timedelta(hours=1), idle_keys_job)
