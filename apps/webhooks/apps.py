from datetime import timedelta

from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "apps.webhooks"
    label = "webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.audit.services import audit_listen
        from apps.jobs.alongside import run_alongside
        from apps.jobs.schedule import register_job

        from . import audit_actions  # noqa: F401 - declares the webhook.* actions
        from .delivery import deliver_event, deliver_one, endpoint_waited_on
        from .events import emit_audited
        from .housekeeping import deliveries_prune, sweep

        audit_listen(emit_audited)
        # Each attempt waits on its endpoint: attempts run side by side, a few per endpoint.
        run_alongside(deliver_event, endpoint_waited_on)
        run_alongside(deliver_one, endpoint_waited_on)
        register_job("webhook-sweep", timedelta(minutes=1), sweep)
        register_job("webhook-prune", timedelta(days=1), deliveries_prune)
