from django.apps import AppConfig


class SsoConfig(AppConfig):
    name = "apps.sso"
    label = "sso"
    verbose_name = "Single sign-on"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.workspaces.gates import register_workspace_gate

        from .gate import sso_required_gate

        register_workspace_gate(sso_required_gate)
