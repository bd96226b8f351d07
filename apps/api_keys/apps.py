from datetime import timedelta

from django.apps import AppConfig


class ApiKeysConfig(AppConfig):
    name = "apps.api_keys"
    label = "api_keys"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.jobs.schedule import register_job
        from apps.metering.buffer import register_flusher
        from apps.workspaces.signals import holder_removed

        from . import checks  # noqa: F401 - registers the system checks
        from .approvals import api_key_approval_job, api_key_reminder_job
        from .services import api_keys_revoke_for_removed
        from .verification import api_key_write_use

        register_flusher(api_key_write_use)
        register_job("approval-deadline", timedelta(hours=1), api_key_approval_job)
        register_job("approval-reminders", timedelta(days=1), api_key_reminder_job)
        holder_removed.connect(api_keys_revoke_for_removed, dispatch_uid="api_keys.removed")
