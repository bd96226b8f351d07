from django.apps import AppConfig


class KeyHealthConfig(AppConfig):
    name = "apps.key_health"
    label = "key_health"
    verbose_name = "Key health"
    default_auto_field = "django.db.models.BigAutoField"
