"""System checks for the server's secrets (`manage.py check` reports them; config/wsgi.py
refuses to serve with a weak secret, since gunicorn runs no checks)."""

from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, register

MIN_SECRET_BYTES = 32
# Values that are somebody's example, not a secret: .env.example's and the development default.
PLACEHOLDER_MARKS = ("change-me", "changeme", "dev-only", "example", "placeholder", "your-")


def hash_secret_problem(value: str) -> str | None:
    """Why `value` cannot be API_KEY_HASH_SECRET or SECRET_KEY in production, or None."""
    lowered = value.lower()
    if any(mark in lowered for mark in PLACEHOLDER_MARKS):
        return "is a placeholder from the examples"
    if len(value.encode()) < MIN_SECRET_BYTES:
        return f"is shorter than {MIN_SECRET_BYTES} bytes"
    if len(set(value)) < 8:
        return "repeats too few characters to be random"
    return None


@register(Tags.security)
def check_api_key_hash_secret(app_configs: Any, **kwargs: Any) -> list[Error]:
    """With DEBUG off, API_KEY_HASH_SECRET must be a real secret: every key's hash depends on it."""
    if settings.DEBUG:
        return []
    problem = hash_secret_problem(settings.API_KEY_HASH_SECRET)
    if problem is None:
        return []
    return [
        Error(
            f"API_KEY_HASH_SECRET {problem}.",
            hint="Set it to at least 32 random bytes, e.g. the output of "
            "`python3 -c 'import secrets; print(secrets.token_urlsafe(48))'`, and keep it apart "
            "from SECRET_KEY.",
            id="gatehouse.E001",
        )
    ]


def weak_secret_settings() -> list[tuple[str, str]]:
    """(setting, problem) for each server secret that is a placeholder or weak, DEBUG off."""
    if settings.DEBUG:
        return []
    return [
        (name, problem)
        for name in ("API_KEY_HASH_SECRET", "SECRET_KEY")
        if (problem := hash_secret_problem(getattr(settings, name))) is not None
    ]


@register(Tags.security)
def check_secret_key(app_configs: Any, **kwargs: Any) -> list[Error]:
    """With DEBUG off, SECRET_KEY must be a real secret: with a known one anybody can sign a
    session or an e-mail confirmation link for any address."""
    problems = dict(weak_secret_settings())
    if "SECRET_KEY" not in problems:
        return []
    return [
        Error(
            f"SECRET_KEY {problems['SECRET_KEY']}.",
            hint="Set it to at least 32 random bytes, e.g. the output of "
            "`python3 -c 'import secrets; print(secrets.token_urlsafe(48))'`.",
            id="gatehouse.E002",
        )
    ]
