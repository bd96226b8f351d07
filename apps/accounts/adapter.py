"""How django-allauth fits Gatehouse: the client address behind our proxies, a sign-in throttle
that says when to try again, and sign-up links that come back to an invitation."""

import math
import time

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core.internal import ratelimit
from django import forms
from django.core.cache import cache
from django.http import HttpRequest

from apps.common.http import client_ip


class AccountAdapter(DefaultAccountAdapter):
    error_messages = {
        **DefaultAccountAdapter.error_messages,
        "email_password_mismatch": "That e-mail and password do not match an account.",
    }

    def get_client_ip(self, request: HttpRequest) -> str:
        """The address the trusted-proxy setting gives (a forged X-Forwarded-For is ignored)."""
        return client_ip(request) or "unknown"

    def pre_authenticate(self, request: HttpRequest, **credentials) -> None:
        """Allauth's failed sign-in limits, refused with how long to wait instead of "later"."""
        try:
            super().pre_authenticate(request, **credentials)
        except forms.ValidationError:
            minutes = max(1, math.ceil(self.sign_in_retry_after(request, **credentials) / 60))
            unit = "minute" if minutes == 1 else "minutes"
            raise forms.ValidationError(
                f"Too many failed sign-ins. Try again in {minutes} {unit}.",
                code="too_many_login_attempts",
            ) from None

    def sign_in_retry_after(self, request: HttpRequest, **credentials) -> float:
        """Seconds until the sign-in limits that are full let one more attempt through."""
        key = self._get_login_attempts_cache_key(request, **credentials)
        now, wait = time.time(), 0.0
        app, action = "allauth.account", "login_failed"
        for rate in ratelimit.get_rates(app=app, action=action):
            cache_key = ratelimit.get_cache_key(request, app=app, action=action, rate=rate, key=key)
            history = [t for t in cache.get(cache_key, []) if t > now - rate.duration]
            if len(history) >= rate.amount:
                # Newest first: the attempt that has to age out is the rate.amount-th newest.
                wait = max(wait, history[rate.amount - 1] + rate.duration - now)
        return wait
