"""The three or four helpers settings.py reads the environment with: booleans, lists,
integers and secrets, each refusing a value it cannot read with a sentence that names it."""

import os

from django.core.exceptions import ImproperlyConfigured


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {value!r}.")


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if not value:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if not value:
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {value!r}.") from None


def env_secret(name: str, dev_default: str, debug: bool) -> str:
    """A secret from the environment; the development default is refused when DEBUG is off."""
    value = os.environ.get(name)
    if value:
        return value
    if not debug:
        raise ImproperlyConfigured(f"{name} must be set when DEBUG is off.")
    return dev_default
