from typing import Any

from allauth.account import app_settings
from allauth.account.adapter import get_adapter
from allauth.account.forms import LoginForm, RequestLoginCodeForm
from allauth.account.internal.userkit import filter_users_by_email
from allauth.core import context, ratelimit
from allauth.core.internal.ratelimit import get_ip
from django import forms

PASSWORD_RULES = (
    "At least 8 characters, not a common password, not only digits, and not like your e-mail."
)


class SignInForm(LoginForm):
    """Allauth's sign-in, labelled as the rest of the dashboard."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["login"].label = "E-mail"
        self.fields["login"].widget.attrs.pop("placeholder", None)
        self.fields["password"].widget.attrs.pop("placeholder", None)
        if "remember" in self.fields:
            del self.fields["remember"]


class RequestSignInCodeForm(RequestLoginCodeForm):
    """Allauth's "e-mail me a sign-in code", limited per account *and* address (an IPv6 /64 as
    one) instead of per account from anywhere: the code is the way in for a new browser while
    strangers hold the ceiling of failed passwords (adapter.py), so a stranger asking for codes
    from elsewhere must not use up the owner's. A code lives in the session of the browser that
    asked for it, so another request never replaces it."""

    def clean_email(self) -> str:
        email = self.cleaned_data["email"]
        if not email:
            return email
        users = filter_users_by_email(email, is_active=True, prefer_verified=True, for_login=True)
        if not users and not app_settings.PREVENT_ENUMERATION:
            raise get_adapter().validation_error("unknown_email")
        request = context.request
        key = f"{email.lower()}@{get_ip(request)}"
        if not ratelimit.consume(request, action="request_login_code", key=key):
            raise forms.ValidationError(
                "Too many sign-in codes asked for from this address. Use the last code sent, "
                "or ask again in a minute.",
                code="too_many_login_attempts",
            )
        self._user = users[0] if users else None
        return email
