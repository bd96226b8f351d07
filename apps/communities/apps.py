from django.apps import AppConfig


class CommunitiesConfig(AppConfig):
    name = "apps.communities"
    label = "communities"
    default_auto_field = "django.db.models.BigAutoField"
