from django.apps import AppConfig


class MeteringConfig(AppConfig):
    name = "apps.metering"
    label = "metering"
    verbose_name = "Metering"

    def ready(self) -> None:
        from . import checks  # noqa: F401 - registers the deploy check
