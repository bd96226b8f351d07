"""The device-authorization grant of RFC 8628, as `gatehouse login` uses it.

The CLI asks for a device code (`device_authorization_start`), shows the user code, and polls
(`device_token_poll`) while the person approves or denies on /device. On the first poll after
approval the key is minted, tagged CLI, and the previous CLI key of the same installation is
revoked in the same transaction. Failures raise DeviceGrantError with the RFC's error code.
"""

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from allauth.mfa.utils import is_mfa_enabled
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from apps.accounts.models import User
from apps.api.scopes import ALL_SCOPES
from apps.api_keys import tokens
from apps.api_keys.models import ApiKey
from apps.api_keys.policy import CLI_LIFETIME, key_policy_problem
from apps.api_keys.services import CreatedApiKey, api_key_create, api_key_revoke
from apps.audit.models import Action
from apps.audit.services import Actor, audit_record
from apps.common.validation import InvalidInput, clean_text
from apps.workspaces.models import Membership, Workspace
from apps.workspaces.selectors import STAFF_ROLES

from .models import DeviceAuthorization

CLIENT_ID = "gatehouse-cli"
USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"  # no vowels (no words), no look-alikes
USER_CODE_LENGTH = 8
DEVICE_CODE_LIFETIME = timedelta(minutes=15)
POLL_INTERVAL = 5
SLOW_DOWN_STEP = 5
WRONG_CODE_LIMIT = 10  # wrong user codes per user per window
WRONG_CODE_WINDOW = 15 * 60
PRUNE_AFTER = timedelta(hours=1)  # expired requests kept this long (their slow_down answers)


class DeviceGrantError(Exception):
    """The grant cannot go on; `code` is the RFC 6749/8628 error code."""

    def __init__(self, code: str, description: str = "") -> None:
        super().__init__(code)
        self.code = code
        self.description = description


@dataclass(frozen=True)
class StartedDeviceAuthorization:
    authorization: DeviceAuthorization
    device_code: str  # the only moment the plaintext device code exists


def clean_requested_scopes(scope: str) -> list[str]:
    """The space-separated `scope` form field: known scopes, or [] when the CLI named none
    (any scope may then be granted, and the approval page starts from read-only)."""
    requested = scope.split()
    if not requested:
        return []
    unknown = [s for s in requested if s not in ALL_SCOPES]
    if unknown:
        raise DeviceGrantError("invalid_scope", f"Unknown scope {unknown[0]!r}.")
    return sorted(set(requested))


def normalise_user_code(raw: str) -> str | None:
    """`wdjb-mjht`, `WDJB MJHT` and `WDJBMJHT` are the same code; None if it cannot be one."""
    code = "".join(ch for ch in raw.upper() if ch not in "- ")
    if len(code) != USER_CODE_LENGTH or any(ch not in USER_CODE_ALPHABET for ch in code):
        return None
    return code


def _new_user_code() -> str:
    while True:
        code = "".join(secrets.choice(USER_CODE_ALPHABET) for _ in range(USER_CODE_LENGTH))
        # 20^8 codes; a clash with a pending one is rare, and the database refuses it anyway.
        status = DeviceAuthorization.Status.PENDING
        if not DeviceAuthorization.objects.filter(user_code=code, status=status).exists():
            return code


def device_authorizations_prune(*, now: datetime | None = None) -> int:
    """Delete login requests expired over an hour ago that minted no key; returns how many.

    Run on every new request, so the table holds what the last hour asked for and the keys'
    own logins, whatever anonymous callers send.
    """
    cutoff = (now or timezone.now()) - PRUNE_AFTER
    deleted, _ = DeviceAuthorization.objects.filter(
        expires_at__lt=cutoff, key__isnull=True
    ).delete()
    return deleted


def device_authorization_start(
    *, client_id: str, scope: str, installation_id: str, device_name: str, ip: str | None
) -> StartedDeviceAuthorization:
    """Register a login request from a device; raises DeviceGrantError for a bad request."""
    if client_id != CLIENT_ID:
        raise DeviceGrantError("invalid_client", "Unknown client_id.")
    scopes = clean_requested_scopes(scope)
    try:
        device_name = clean_text(device_name or "CLI", "device_name", max_length=100)
        installation_id = clean_text(installation_id, "installation_id", max_length=64)
    except InvalidInput as error:
        raise DeviceGrantError("invalid_request", error.message) from None
    now = timezone.now()
    device_authorizations_prune(now=now)
    device_code = secrets.token_urlsafe(32)
    authorization = DeviceAuthorization.objects.create(
        device_code_hash=tokens.hash_secret(device_code),
        user_code=_new_user_code(),
        client_id=client_id,
        scopes=scopes,
        installation_id=installation_id,
        device_name=device_name,
        requested_ip=ip,
        created_at=now,
        expires_at=now + DEVICE_CODE_LIFETIME,
        interval=POLL_INTERVAL,
    )
    return StartedDeviceAuthorization(authorization=authorization, device_code=device_code)


def _wrong_code_counter(user: User) -> str:
    return f"device:wrong-codes:{user.pk}"


def device_code_attempts_left(user: User) -> int:
    return WRONG_CODE_LIMIT - (cache.get(_wrong_code_counter(user)) or 0)


def device_authorization_find(*, user: User, raw_code: Any) -> DeviceAuthorization:
    """The pending, unexpired login a user code names, for this person to approve or deny.

    Raises InvalidInput for an unknown code, counting it against the person: after 10 wrong
    codes in 15 minutes every code is refused until the window ends.
    """
    counter = _wrong_code_counter(user)
    if device_code_attempts_left(user) <= 0:
        raise InvalidInput("code", "Too many wrong codes. Try again in 15 minutes.")
    code = normalise_user_code(raw_code if isinstance(raw_code, str) else "")
    authorization = None
    if code is not None:
        authorization = DeviceAuthorization.objects.filter(
            user_code=code,
            status=DeviceAuthorization.Status.PENDING,
            expires_at__gt=timezone.now(),
        ).first()
    if authorization is None:
        if not cache.add(counter, 1, timeout=WRONG_CODE_WINDOW):
            cache.incr(counter)
        raise InvalidInput(
            "code", "That code is not valid or has expired. Check the code your terminal shows."
        )
    return authorization


def device_authorization_approve(
    *, authorization: DeviceAuthorization, user: User, workspace: Workspace, scopes: list[str]
) -> DeviceAuthorization:
    """Approve a pending login for `workspace`, with the requested scopes or fewer."""
    chosen = sorted(set(scopes))
    if not chosen:
        raise InvalidInput("scopes", "Choose at least one permission.")
    widened = [s for s in chosen if s not in authorization.grantable_scopes]
    if widened:
        raise InvalidInput("scopes", f"The CLI did not ask for {widened[0]}; it cannot be added.")
    problem = device_approval_problem(user, workspace, now=timezone.now())
    if problem:
        raise InvalidInput("workspace", problem)
    updated = DeviceAuthorization.objects.filter(
        pk=authorization.pk,
        status=DeviceAuthorization.Status.PENDING,
        expires_at__gt=timezone.now(),
    ).update(
        status=DeviceAuthorization.Status.APPROVED,
        user=user,
        workspace=workspace,
        approved_scopes=chosen,
    )
    if not updated:
        raise InvalidInput("code", "This login request has expired or was already answered.")
    authorization.refresh_from_db()
    return authorization


def device_authorization_deny(*, authorization: DeviceAuthorization, user: User) -> None:
    DeviceAuthorization.objects.filter(
        pk=authorization.pk, status=DeviceAuthorization.Status.PENDING
    ).update(status=DeviceAuthorization.Status.DENIED, user=user)


def device_token_poll(
    *, device_code: str, client_id: str, ip: str | None, now: datetime | None = None
) -> CreatedApiKey:
    """One poll of the CLI: the new key once approved, else DeviceGrantError saying why not.

    The row is locked for the poll, so of many concurrent polls after approval exactly one
    mints the key; the others find it used (invalid_grant).
    """
    if client_id != CLIENT_ID:
        raise DeviceGrantError("invalid_client", "Unknown client_id.")
    now = now or timezone.now()
    with transaction.atomic():
        outcome = _poll_locked(device_code, ip=ip, now=now)
    # Raised after the commit: the poll's own stamp (and a raised interval) must be kept.
    if isinstance(outcome, DeviceGrantError):
        raise outcome
    return outcome


def _poll_locked(device_code: str, *, ip: str | None, now: datetime):
    authorization = (
        DeviceAuthorization.objects.select_for_update()
        .filter(device_code_hash=tokens.hash_secret(device_code or ""))
        .first()
    )
    if authorization is None or authorization.status == DeviceAuthorization.Status.USED:
        return DeviceGrantError("invalid_grant", "Unknown or already used device code.")
    if now >= authorization.expires_at:
        return DeviceGrantError("expired_token", "The login request expired; log in again.")
    if authorization.status == DeviceAuthorization.Status.DENIED:
        return DeviceGrantError("access_denied", "The login was denied in the browser.")
    too_soon = authorization.last_polled_at is not None and now - authorization.last_polled_at < (
        timedelta(seconds=authorization.interval)
    )
    authorization.last_polled_at = now
    if too_soon:
        authorization.interval += SLOW_DOWN_STEP
        authorization.save(update_fields=["last_polled_at", "interval"])
        return DeviceGrantError("slow_down", f"Poll every {authorization.interval} seconds.")
    if authorization.status == DeviceAuthorization.Status.PENDING:
        authorization.save(update_fields=["last_polled_at"])
        return DeviceGrantError("authorization_pending", "Waiting for approval in the browser.")
    return _issue_cli_key(authorization, ip=ip, now=now)


def _cli_key_policy_problem(workspace: Workspace, now: datetime) -> str | None:
    problem = key_policy_problem(workspace, now + CLI_LIFETIME, now=now)
    if problem:
        return (
            f"{problem} CLI keys last 90 days, so an owner must allow at least that for CLI logins."
        )
    return None


def device_approval_problem(user: User, workspace: Workspace, *, now: datetime) -> str | None:
    """Why `user` may not (or no longer) log the CLI in to `workspace`, or None.

    Checked when the person approves and again when the key is minted, since a role, a
    policy or the person's place in the team may change in between.
    """
    if not user.is_active:
        return "This account is disabled."
    role = (
        Membership.objects.filter(user=user, workspace=workspace)
        .values_list("role", flat=True)
        .first()
    )
    if role not in STAFF_ROLES:
        return f"Only owners and admins of {workspace.name} can log in the CLI."
    if workspace.require_two_factor and not is_mfa_enabled(user):
        return (
            f"{workspace.name} requires two-factor authentication: add an authenticator app "
            "or a passkey first."
        )
    return _cli_key_policy_problem(workspace, now)


def _issue_cli_key(authorization: DeviceAuthorization, *, ip: str | None, now: datetime):
    """Mint the CLI key of an approved login and revoke the installation's previous one."""
    user, workspace = authorization.user, authorization.workspace
    problem = device_approval_problem(user, workspace, now=now)
    if problem:  # the role, the team or a policy changed between approval and this poll
        authorization.status = DeviceAuthorization.Status.DENIED
        authorization.save(update_fields=["status", "last_polled_at"])
        return DeviceGrantError("access_denied", problem)
    actor = Actor.of_user(user, ip)
    previous = ApiKey.objects.filter(
        workspace=workspace,
        user=user,
        installation_id=authorization.installation_id,
        revoked_at__isnull=True,
    ).select_related("workspace", "user")
    for key in previous:
        api_key_revoke(key=key, actor=actor)
    created = api_key_create(
        workspace=workspace,
        user=user,
        name=authorization.device_name,
        scopes=authorization.approved_scopes,
        expires_at=None,
        tag=ApiKey.Tag.CLI,
        installation_id=authorization.installation_id,
        actor=actor,
    )
    authorization.status = DeviceAuthorization.Status.USED
    authorization.key = created.key
    authorization.save(update_fields=["status", "key", "last_polled_at"])
    audit_record(
        workspace=workspace,
        action=Action.CLI_LOGIN,
        actor=actor,
        key=created.key,
        subject=f"{created.key.name} ({created.key.hint})",
        data={
            "device": authorization.device_name,
            "requestedFrom": authorization.requested_ip,
            "scopes": authorization.approved_scopes,
        },
    )
    return created
