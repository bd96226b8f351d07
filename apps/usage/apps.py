from datetime import timedelta

from django.apps import AppConfig


class UsageConfig(AppConfig):
    name = "apps.usage"
    label = "usage"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.jobs.schedule import register_job
        from apps.metering.buffer import register_flusher, register_mover
        from apps.quotas.counting import register_answered_counter, register_threshold_listener

        from . import audit_actions  # noqa: F401 - declares key.new_network
        from .answered import answered_since
        from .key_stamps import write_key_uses
        from .moving import usage_move, usage_move_all
        from .quota_warnings import quota_thresholds_heard
        from .recording import write_counts_and_networks
        from .services import usage_daily

        register_flusher(write_key_uses)
        register_flusher(write_counts_and_networks)
        register_answered_counter(answered_since)
        register_threshold_listener(quota_thresholds_heard)
        register_mover(usage_move, name="usage counts", sweep=usage_move_all)
        register_job("usage-move", timedelta(minutes=1), usage_move_all)
        register_job("usage-daily", timedelta(days=1), usage_daily)
