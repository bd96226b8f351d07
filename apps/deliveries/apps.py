from django.apps import AppConfig


class DeliveriesConfig(AppConfig):
    name = "apps.deliveries"
    label = "deliveries"
