import pytest
from django.core.cache import cache

from apps.api.ratelimit import rate_limit_reset
from apps.api.usage import usage_reset
from apps.api_keys.auth import blocked_addresses

from .client import Client
from .factories import make_key


@pytest.fixture(autouse=True)
def _fast_and_isolated(settings):
    # Argon2 is deliberately slow; tests do not need it to be.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.SIGN_UP_MIN_SECONDS = 0  # the sign-up timing test sets its own
    settings.USAGE_FLUSH_SECONDS = 0  # every request writes its stamps and counts at its end
    cache.clear()
    rate_limit_reset()
    blocked_addresses.clear()
    usage_reset()
    yield
    cache.clear()
    rate_limit_reset()
    blocked_addresses.clear()
    usage_reset()


@pytest.fixture
def client() -> Client:
    """pytest-django's client, as tests/client.py signs in (sudo mode counts at once)."""
    return Client()


@pytest.fixture
def key(db):
    """A key holding every scope, with its secret."""
    return make_key()


def auth(secret: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}


def pytest_collection_modifyitems(config, items):
    from django.conf import settings

    if "postgresql" not in settings.DATABASES["default"]["ENGINE"]:
        skip = pytest.mark.skip(reason="needs PostgreSQL: set DATABASE_URL to run it")
        for item in items:
            if "postgres" in item.keywords:
                item.add_marker(skip)
