from django.apps import AppConfig


class KeyPagesConfig(AppConfig):
    """The key's dashboard pages: list, create, detail, roll, narrow, revoke, export. Above the
    key's core (apps.api_keys), which never imports a form or a view."""

    name = "apps.key_pages"
    label = "key_pages"
    default_auto_field = "django.db.models.BigAutoField"
