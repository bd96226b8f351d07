from django.apps import AppConfig


class QuotasConfig(AppConfig):
    name = "apps.quotas"
    label = "quotas"
    verbose_name = "Quotas"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.metering.buffer import register_mover

        from .counting import quota_checkpoint, quota_checkpoint_sweep

        register_mover(quota_checkpoint, name="quota counts", sweep=quota_checkpoint_sweep)
