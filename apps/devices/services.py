"""The device-authorization grant of RFC 8628, as `gatehouse login` uses it.

The CLI asks for a device code (`device_authorization_start`), shows the user code, and polls
(`device_token_poll`) while the person approves or denies on /device. On the first poll after
approval the key is minted, tagged CLI, and the previous CLI key of the same installation is
revoked in the same transaction. Failures raise DeviceGrantError with the RFC's error code.
"""

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from apps.api.scopes import ALL_SCOPES
from apps.api_keys import tokens
from apps.api_keys.models import ApiKey
from apps.api_keys.services import CreatedApiKey, api_key_create, api_key_revoke
from apps.audit.services import Actor, audit_record
from apps.common.validation import InvalidInput, clean_text

from .approval import device_approval_problem
from .audit_actions import CLI_LOGIN
from .codes import new_user_code
from .models import DeviceAuthorization

CLIENT_ID = "gatehouse-cli"
DEVICE_CODE_LIFETIME = timedelta(minutes=15)
POLL_INTERVAL = 5
SLOW_DOWN_STEP = 5
PRUNE_AFTER = timedelta(hours=1)  # expired requests kept this long (their slow_down answers)


class DeviceGrantError(Exception):
    """The grant cannot go on; `code` is the RFC 6749/8628 error code."""

    def __init__(self, code: str, description: str = "") -> None:
        super().__init__(code)
        self.code = code
        self.description = description


@dataclass(frozen=True)
class IssuedCliKey(CreatedApiKey):
    """A CLI key with its secret, and the hints of the installation's keys it replaced."""

    replaced_hints: tuple[str, ...] = ()


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
        user_code=new_user_code(),
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


def device_token_poll(
    *, device_code: str, client_id: str, ip: str | None, now: datetime | None = None
) -> IssuedCliKey:
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


def _poll_locked(
    device_code: str, *, ip: str | None, now: datetime
) -> IssuedCliKey | DeviceGrantError:
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


def _issue_cli_key(
    authorization: DeviceAuthorization, *, ip: str | None, now: datetime
) -> IssuedCliKey | DeviceGrantError:
    """Mint the CLI key of an approved login and revoke the installation's previous one."""
    user, workspace = authorization.user, authorization.workspace
    assert user is not None and workspace is not None  # set on approval
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
    replaced = tuple(api_key_revoke(key=key, actor=actor).hint for key in previous)
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
        action=CLI_LOGIN,
        actor=actor,
        key=created.key,
        subject=f"{created.key.name} ({created.key.hint})",
        data={
            "device": authorization.device_name,
            "requestedFrom": authorization.requested_ip,
            "scopes": authorization.approved_scopes,
            "replaced": list(replaced),
        },
    )
    return IssuedCliKey(key=created.key, secret=created.secret, replaced_hints=replaced)
