from datetime import timedelta

from django.apps import AppConfig


class AuditStreamsConfig(AppConfig):
    name = "apps.audit_streams"
    label = "audit_streams"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.audit.services import audit_listen
        from apps.jobs.schedule import register_job

        from . import audit_actions  # noqa: F401 - declares the audit_stream.* actions
        from .delivery import streams_sweep
        from .outbox import stream_audited

        audit_listen(stream_audited)
        register_job("audit-stream-sweep", timedelta(minutes=1), streams_sweep)
