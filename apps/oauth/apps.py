from datetime import timedelta

from django.apps import AppConfig


class OAuthConfig(AppConfig):
    name = "apps.oauth"
    label = "oauth"
    verbose_name = "OAuth sign-in"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.api.middleware import register_machine_paths
        from apps.jobs.schedule import register_job

        from . import audit_actions  # noqa: F401 - declares the oauth.* actions
        from .housekeeping import oauth_prune
        from .views import MACHINE_PATHS, machine_error

        register_job("oauth-prune", timedelta(days=1), oauth_prune)
        # Programs call these: no session, CSRF, messages or htmx, as the API.
        register_machine_paths(machine_error, *MACHINE_PATHS)
