from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "apps.workspaces"
    label = "workspaces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.accounts.security_log import account_event_listen

        from .account_audit import account_event_audited

        account_event_listen(account_event_audited)
