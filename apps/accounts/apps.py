from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "apps.accounts"
    label = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from .middleware import start_session_clock

        user_logged_in.connect(start_session_clock, dispatch_uid="gatehouse.session_clock")

        from .security_log import connect

        connect()
