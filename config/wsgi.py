import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()


def _refuse_a_weak_hash_secret() -> None:
    # gunicorn runs no system checks; a placeholder secret would silently protect every key.
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    from apps.api_keys.checks import hash_secret_problem

    problem = None if settings.DEBUG else hash_secret_problem(settings.API_KEY_HASH_SECRET)
    if problem:
        raise ImproperlyConfigured(f"API_KEY_HASH_SECRET {problem}; see manage.py check --deploy.")


_refuse_a_weak_hash_secret()
