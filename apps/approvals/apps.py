from datetime import timedelta

from django.apps import AppConfig


class ApprovalsConfig(AppConfig):
    name = "apps.approvals"
    label = "approvals"
    verbose_name = "Approvals"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.api_keys.signals import key_waiting
        from apps.jobs.schedule import register_job

        from .requests import api_key_request_approval
        from .services import api_key_approval_job, api_key_reminder_job

        key_waiting.connect(api_key_request_approval, dispatch_uid="approvals.request")
        register_job("approval-deadline", timedelta(hours=1), api_key_approval_job)
        register_job("approval-reminders", timedelta(days=1), api_key_reminder_job)
