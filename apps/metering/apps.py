from django.apps import AppConfig


class MeteringConfig(AppConfig):
    name = "apps.metering"
    label = "metering"
    verbose_name = "Metering"
