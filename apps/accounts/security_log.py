"""The account's security log: what allauth and Django report about an account, written as
AccountEvents with the client address the trusted-proxy setting gives. Nothing here stores a
password, a code or a secret; a failed sign-in names only the account it was aimed at."""

from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.http import HttpRequest

from apps.common.http import client_ip

from .models import AccountEvent, User

Action = AccountEvent.Action
KEPT = 100  # the page shows this many


def account_event_record(
    user: User,
    action: str,
    *,
    request: HttpRequest | None = None,
    ip: str | None = None,
    detail: str = "",
) -> AccountEvent:
    """Add one event to `user`'s security log; the listeners hear it in the same transaction
    (apps.workspaces puts it in the audit log of each workspace the user belongs to)."""
    with transaction.atomic():
        event = AccountEvent.objects.create(
            user=user,
            action=action,
            ip=ip if ip is not None else (client_ip(request) if request is not None else None),
            detail=detail[:200],
        )
        for listener in _listeners:
            listener(event)
    return event


AccountEventListener = Callable[[AccountEvent], None]
_listeners: list[AccountEventListener] = []


def account_event_listen(listener: AccountEventListener) -> None:
    """Call `listener(event)` for every account event recorded, inside its transaction."""
    if listener not in _listeners:
        _listeners.append(listener)


def _user_of(user: Any) -> User | None:
    return user if isinstance(user, User) else None


def on_signed_in(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    if (account := _user_of(user)) is not None:
        account_event_record(account, Action.SIGNED_IN, request=request)


def on_sign_in_failed(
    sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs: Any
) -> None:
    """A wrong password for an existing account (an unknown address leaves no trace)."""
    email = str(credentials.get("email") or credentials.get("username") or "")
    account = User.objects.filter(email__iexact=email).first() if email else None
    if account is not None:
        account_event_record(account, Action.SIGN_IN_FAILED, request=request)


def on_password_changed(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    if (account := _user_of(user)) is not None:
        account_event_record(account, Action.PASSWORD_CHANGED, request=request)


def on_password_reset(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    if (account := _user_of(user)) is not None:
        account_event_record(account, Action.PASSWORD_RESET, request=request)


def _authenticator_name(authenticator: Any) -> str:
    kinds = {"totp": "authenticator app", "webauthn": "passkey", "recovery_codes": "recovery codes"}
    return kinds.get(str(getattr(authenticator, "type", "")), "second factor")


def _on_second_factor(action: str) -> Callable[..., None]:
    """A receiver for allauth's authenticator_added or authenticator_removed."""

    def receiver(
        sender: Any, request: HttpRequest, user: Any, authenticator: Any, **kwargs: Any
    ) -> None:
        if (account := _user_of(user)) is not None:
            detail = _authenticator_name(authenticator)
            account_event_record(account, action, request=request, detail=detail)

    return receiver


on_second_factor_added = _on_second_factor(Action.SECOND_FACTOR_ADDED)
on_second_factor_removed = _on_second_factor(Action.SECOND_FACTOR_REMOVED)


def on_second_factor_failed(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    if (account := _user_of(user)) is not None:
        account_event_record(account, Action.SECOND_FACTOR_FAILED, request=request)


def connect() -> None:
    """Subscribe to Django's and allauth's signals (AccountsConfig.ready())."""
    from allauth.account import signals as account_signals
    from allauth.mfa import signals as mfa_signals
    from django.contrib.auth.signals import user_logged_in, user_login_failed

    user_logged_in.connect(on_signed_in, dispatch_uid="security_log.signed_in")
    user_login_failed.connect(on_sign_in_failed, dispatch_uid="security_log.failed")
    account_signals.password_changed.connect(on_password_changed, dispatch_uid="security_log.pw")
    account_signals.password_reset.connect(on_password_reset, dispatch_uid="security_log.reset")
    mfa_signals.authenticator_added.connect(
        on_second_factor_added, dispatch_uid="security_log.mfa+"
    )
    mfa_signals.authenticator_removed.connect(
        on_second_factor_removed, dispatch_uid="security_log.mfa-"
    )
    mfa_signals.authentication_failed.connect(
        on_second_factor_failed, dispatch_uid="security_log.mfa!"
    )
