from datetime import datetime, timedelta

from django.apps import AppConfig


class RequestLogConfig(AppConfig):
    name = "apps.request_log"
    label = "request_log"
    verbose_name = "Request log"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.jobs.schedule import register_job
        from apps.metering.buffer import register_flusher, register_mover
        from apps.metering.witnesses import register_use_witness

        from .housekeeping import request_log_daily
        from .models import RequestLogEntry
        from .moving import request_log_move, request_log_move_all
        from .recording import write_gathered

        def logged_since(key_id: int, since: datetime) -> bool:
            return RequestLogEntry.objects.filter(key_id=key_id, at__gte=since).exists()

        register_use_witness(logged_since)
        register_flusher(write_gathered)
        register_mover(request_log_move, name="request log entries", sweep=request_log_move_all)
        register_job("request-log-move", timedelta(minutes=1), request_log_move_all)
        register_job("request-log-daily", timedelta(days=1), request_log_daily)
