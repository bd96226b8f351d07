from django.apps import AppConfig


class UsageConfig(AppConfig):
    name = "apps.usage"
    label = "usage"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.api.usage import register_flusher

        from . import audit_actions  # noqa: F401 - declares key.new_network
        from .recording import write_counts_and_networks

        register_flusher(write_counts_and_networks)
