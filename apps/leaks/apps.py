from django.apps import AppConfig


class LeaksConfig(AppConfig):
    name = "apps.leaks"
    label = "leaks"
    verbose_name = "Leaked keys (GitHub secret scanning)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401 - registers the system check
