"""The test client the suite uses: Django's, with a sign-in that also counts for sudo mode."""

from typing import Any

from django import test
from django.conf import settings

from .factories import PASSWORD


class Client(test.Client):
    """`force_login` then confirms the password on allauth's re-authentication page, as a
    person who has just typed it would have: creating or rolling a key works at once, as it
    does right after a real sign-in. Tests of sudo mode itself move the clock instead."""

    def force_login(self, user: Any, backend: str | None = None) -> None:
        super().force_login(user, backend)
        if user.has_usable_password() and user.check_password(PASSWORD):
            form = {"password": PASSWORD}
            if self.handler.enforce_csrf_checks:  # a client that checks CSRF sends the token
                self.get("/account/reauthenticate/")
                form["csrfmiddlewaretoken"] = self.cookies[settings.CSRF_COOKIE_NAME].value
            confirmed = self.post("/account/reauthenticate/", form)
            assert confirmed.status_code == 302, "the password was not confirmed"
