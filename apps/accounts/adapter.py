"""How django-allauth fits Gatehouse: the client address behind our proxies, a sign-in throttle
that says when to try again, and sign-up links that come back to an invitation."""

import hashlib
import math
import time
from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.internal.flows.login import (
    get_authentication_records,
    record_authentication,
)
from allauth.account.internal.stagekit import clear_login
from allauth.core.internal import ratelimit
from django import forms
from django.conf import settings
from django.contrib import messages
from django.core import signing
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from apps.common.http import client_ip

LOGIN_FAILED = "login_failed"
VERIFICATION_SENT_AT = "gatehouse_verification_sent_at"
JUST_SENT_SECONDS = 30
SERVICE_ACCOUNT_REFUSAL = "A service account has no sign-in: use one of its keys."


def verification_state(request: HttpRequest) -> dict[str, bool]:
    """Context processor: whether a verification link went out moments ago in this session."""
    session = getattr(request, "session", None)
    sent_at = session.get(VERIFICATION_SENT_AT) if session is not None else None
    return {"verification_just_sent": bool(sent_at and time.time() - sent_at < JUST_SENT_SECONDS)}


ACCOUNT_CEILING = "login_failed_account"
KNOWN_DEVICE_COOKIE = "gatehouse_known_device"
KNOWN_DEVICE_SALT = "apps.accounts.known-device"
KNOWN_DEVICE_DAYS = 90


def _login_of(credentials: dict[str, Any]) -> str:
    return str(credentials.get("email", credentials.get("username", ""))).lower()


def _device_mark(login: str) -> str:
    return hashlib.sha256(login.lower().encode()).hexdigest()[:32]


def is_known_device(request: HttpRequest, login: str) -> bool:
    """Whether this browser carries our signed mark of an earlier sign-in to `login`."""
    try:
        marks = signing.loads(
            request.COOKIES.get(KNOWN_DEVICE_COOKIE, ""),
            salt=KNOWN_DEVICE_SALT,
            max_age=KNOWN_DEVICE_DAYS * 86400,
        )
    except signing.BadSignature:
        return False
    return isinstance(marks, list) and _device_mark(login) in marks


def remember_device(response: HttpResponse, login: str) -> None:
    """Mark the browser behind `response` as one that signed in to `login` (kept 90 days)."""
    response.set_cookie(
        KNOWN_DEVICE_COOKIE,
        signing.dumps([_device_mark(login)], salt=KNOWN_DEVICE_SALT),
        max_age=KNOWN_DEVICE_DAYS * 86400,
        secure=not settings.DEBUG,
        httponly=True,
        samesite="Lax",
    )


class AccountAdapter(DefaultAccountAdapter):
    error_messages = {
        **DefaultAccountAdapter.error_messages,
        "email_password_mismatch": "That e-mail and password do not match an account.",
    }

    def get_client_ip(self, request: HttpRequest) -> str:
        """The address the trusted-proxy setting gives (a forged X-Forwarded-For is ignored)."""
        return client_ip(request) or "unknown"

    # Failed sign-ins are limited three ways (ACCOUNT_RATE_LIMITS): per client address; per
    # account *and* address (allauth's "key", made per pair below), which stops guessing from
    # one place; and per account from anywhere, a higher ceiling that stops a distributed guess
    # but is skipped by a browser that has signed in to this account before (a signed
    # "known device" cookie), so nobody can lock the real owner out by failing on purpose.

    def _get_login_attempts_cache_key(self, request: HttpRequest, **credentials: Any) -> str:
        account = super()._get_login_attempts_cache_key(request, **credentials)
        return f"{account}@{ratelimit.get_ip(request)}"

    def _account_attempts_key(self, request: HttpRequest, **credentials: Any) -> str:
        return super()._get_login_attempts_cache_key(request, **credentials)

    def _limits(self, request: HttpRequest, **credentials: Any) -> list[tuple[str, str]]:
        """(allauth action, cache key) of each limit this sign-in attempt counts against."""
        limits = [(LOGIN_FAILED, self._get_login_attempts_cache_key(request, **credentials))]
        if not is_known_device(request, _login_of(credentials)):
            limits.append((ACCOUNT_CEILING, self._account_attempts_key(request, **credentials)))
        return limits

    def pre_authenticate(self, request: HttpRequest, **credentials: Any) -> None:
        """Allauth's failed sign-in limits plus the account ceiling, refused with how long to
        wait instead of "later"."""
        try:
            super().pre_authenticate(request, **credentials)
            self._account_usage = None
            if not is_known_device(request, _login_of(credentials)):
                self._account_usage = ratelimit.consume(
                    request,
                    app="allauth.account",
                    action=ACCOUNT_CEILING,
                    key=self._account_attempts_key(request, **credentials),
                )
                if not self._account_usage:
                    self._rollback_login_failed_rl_usage()
                    raise self.validation_error("too_many_login_attempts")
        except forms.ValidationError:
            minutes = max(1, math.ceil(self.sign_in_retry_after(request, **credentials) / 60))
            unit = "minute" if minutes == 1 else "minutes"
            raise forms.ValidationError(
                f"Too many failed sign-ins. Try again in {minutes} {unit}. Or use “E-mail me a "
                "sign-in code” below: a code sent to the account's address is not held back.",
                code="too_many_login_attempts",
            ) from None

    def _rollback_login_failed_rl_usage(self) -> None:
        super()._rollback_login_failed_rl_usage()
        if usage := getattr(self, "_account_usage", None):
            usage.rollback()

    def send_confirmation_mail(
        self, request: HttpRequest, emailconfirmation: Any, signup: bool
    ) -> None:
        """Send the link, and note when: the "check your e-mail" page then tells apart a
        link just sent from one held back by the 3-minute cooldown."""
        super().send_confirmation_mail(request, emailconfirmation, signup)
        if hasattr(request, "session"):
            request.session[VERIFICATION_SENT_AT] = time.time()

    def pre_login(self, request: HttpRequest, user: Any, **kwargs: Any) -> HttpResponse | None:
        """A service account never signs in, by any way allauth offers (docs/product.md §12)."""
        if getattr(user, "is_service_account", False):
            clear_login(request)
            messages.error(request, SERVICE_ACCOUNT_REFUSAL)
            return redirect("account_login")
        return super().pre_login(request, user, **kwargs)

    def send_mail(self, template_prefix: str, email: str, context: dict[str, Any]) -> None:
        """Nothing is ever sent to a reserved `.invalid` address (a service account's)."""
        if email.lower().rstrip(".").endswith(".invalid"):
            return
        super().send_mail(template_prefix, email, context)

    def post_login(self, request: HttpRequest, user: Any, **kwargs: Any) -> HttpResponse:
        """Sign in as allauth does, and remember this browser for the account ceiling. A
        sign-in by the address's confirmation link (right after signing up) proved the inbox,
        as a sign-in code does: it counts as a recent authentication, so a newcomer's first
        key asks for no password again."""
        if not get_authentication_records(request, user):
            record_authentication(request, user, method="email_confirmation")
        response = super().post_login(request, user, **kwargs)
        remember_device(response, user.email)
        return response

    def sign_in_retry_after(self, request: HttpRequest, **credentials: Any) -> float:
        """Seconds until the sign-in limits that are full let one more attempt through."""
        now, wait = time.time(), 0.0
        app = "allauth.account"
        for action, key in [(LOGIN_FAILED, None), *self._limits(request, **credentials)]:
            for rate in ratelimit.get_rates(app=app, action=action):
                if (rate.per == "key") != (key is not None):
                    continue
                cache_key = ratelimit.get_cache_key(
                    request, app=app, action=action, rate=rate, key=key
                )
                history = [t for t in cache.get(cache_key, []) if t > now - rate.duration]
                if len(history) >= rate.amount:
                    # Newest first: the attempt that has to age out is the rate.amount-th newest.
                    wait = max(wait, history[rate.amount - 1] + rate.duration - now)
        return wait
