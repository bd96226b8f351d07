from django.apps import AppConfig


class ApiKeysConfig(AppConfig):
    name = "apps.api_keys"
    label = "api_keys"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.common import server_secrets  # noqa: F401 - registers the secrets' checks
        from apps.workspaces.signals import holder_removed, holder_restored, holder_suspended

        from .removal import api_keys_revoke_for_removed
        from .suspension import api_keys_restore_for, api_keys_suspend_for

        holder_removed.connect(api_keys_revoke_for_removed, dispatch_uid="api_keys.removed")
        holder_suspended.connect(api_keys_suspend_for, dispatch_uid="api_keys.suspended")
        holder_restored.connect(api_keys_restore_for, dispatch_uid="api_keys.restored")
