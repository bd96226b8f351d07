from django.apps import AppConfig


class AuditPagesConfig(AppConfig):
    """The Audit page and its CSV: reading the log that `apps.audit` writes.

    Kept apart from the writer, which every app below it uses, because the pages stand on the
    tenant core (workspace decorators, settings labels) that the writer must not import."""

    name = "apps.audit_pages"
    label = "audit_pages"
