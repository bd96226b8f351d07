from django.apps import AppConfig


class KeyPagesConfig(AppConfig):
    """The key's dashboard pages: list, create, detail, roll, narrow, revoke, export. Above the
    key's core (apps.api_keys), which never imports a form or a view."""

    name = "apps.key_pages"
    label = "key_pages"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.workspaces.context_processors import register_owner_nav

        from .approval_views import approvals_nav

        register_owner_nav(approvals_nav)
