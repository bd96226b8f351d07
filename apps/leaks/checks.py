"""The system check of secret scanning's configuration."""

from typing import Any

from django.conf import settings
from django.core.checks import Error, Tags, register

from .reports import parse_public_keys


@register(Tags.security)
def check_secret_scanning_public_keys(app_configs: Any, **kwargs: Any) -> list[Error]:
    """SECRET_SCANNING_PUBLIC_KEYS must parse, or every leak report would be refused."""
    try:
        parse_public_keys(settings.SECRET_SCANNING_PUBLIC_KEYS)
    except ValueError as error:
        return [
            Error(
                f"SECRET_SCANNING_PUBLIC_KEYS cannot be read: {error}.",
                hint="Paste the body of https://api.github.com/meta/public_keys/secret_scanning, "
                "leave it empty, or run `manage.py refreshsecretscanningkeys`.",
                id="gatehouse.E003",
            )
        ]
    return []
