import os

from django.core.wsgi import get_wsgi_application

from apps.common.wsgi import refuse_unreadable_requests

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = refuse_unreadable_requests(get_wsgi_application())


def _tracing_wanted() -> bool:
    # Asked here without importing OpenTelemetry: unset, nothing of it is loaded.
    from apps.operations.tracing_switch import tracing_wanted

    return tracing_wanted(os.environ)


if _tracing_wanted():
    from apps.operations.tracing import traced, tracing_start

    tracing_start()
    application = traced(application)


def _refuse_weak_secrets() -> None:
    # gunicorn runs no system checks; a placeholder secret would silently protect every key
    # (API_KEY_HASH_SECRET) or let anyone sign sessions and confirmation links (SECRET_KEY).
    from django.core.exceptions import ImproperlyConfigured

    from apps.common.server_secrets import weak_secret_settings

    for name, problem in weak_secret_settings():
        raise ImproperlyConfigured(f"{name} {problem}; see manage.py check --deploy.")


_refuse_weak_secrets()
