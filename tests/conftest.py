import time

import pytest
from allauth.account.internal.flows.login import (
    _AUTHENTICATION_METHODS_USER_SESSION_KEY,
    AUTHENTICATION_METHODS_SESSION_KEY,
)
from django.core.cache import cache
from django.test import Client

from apps.api.ratelimit import rate_limit_reset
from apps.api_keys.auth import blocked_addresses

from .factories import make_key


@pytest.fixture(autouse=True)
def _fast_and_isolated(settings):
    # Argon2 is deliberately slow; tests do not need it to be.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.SIGN_UP_MIN_SECONDS = 0  # the sign-up timing test sets its own
    cache.clear()
    rate_limit_reset()
    blocked_addresses.clear()
    yield
    cache.clear()
    rate_limit_reset()
    blocked_addresses.clear()


_force_login = Client.force_login


def _force_login_with_password(self, user, backend=None):
    """The test client's force_login, as if the password had just been typed on the sign-in
    page: allauth records that, and sudo mode counts it as recent authentication."""
    _force_login(self, user, backend)
    session = self.session
    session[AUTHENTICATION_METHODS_SESSION_KEY] = [{"method": "password", "at": time.time()}]
    session[_AUTHENTICATION_METHODS_USER_SESSION_KEY] = str(user.pk)
    session.save()


Client.force_login = _force_login_with_password


def authenticated_minutes_ago(client, minutes: float) -> None:
    """Move the session's last password or second factor `minutes` into the past."""
    session = client.session
    for record in session[AUTHENTICATION_METHODS_SESSION_KEY]:
        record["at"] = time.time() - minutes * 60
    session.save()


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
