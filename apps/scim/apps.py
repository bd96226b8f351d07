import logging

from django.apps import AppConfig


class ScimConfig(AppConfig):
    name = "apps.scim"
    label = "scim"
    verbose_name = "SCIM provisioning"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # scim2-models parses paths with lark, which gives its logger a bare stderr handler on
        # import: its records go to ours instead, which remove secrets (apps/common/logging.py).
        import lark  # noqa: F401

        lark_logger = logging.getLogger("lark")
        for handler in list(lark_logger.handlers):
            lark_logger.removeHandler(handler)
