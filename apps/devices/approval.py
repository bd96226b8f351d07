"""The person's side of `gatehouse login`: find the login a user code names, check who may
approve it, approve (narrowing the scopes) or deny. The same checks run again when the key is
minted (`apps.oauth.cli_keys.cli_key_issue`), since a role or a policy may change in between."""

from datetime import datetime
from typing import Any

from django.core.cache import cache
from django.utils import timezone

from apps.accounts.models import AccountEvent, User
from apps.accounts.security_log import account_event_record
from apps.api_keys.models import ApiKey
from apps.api_keys.policy import (
    CLI_LIFETIME,
    approval_covers,
    approval_note,
    key_holder_problem,
    key_policy_problem,
)
from apps.common.validation import InvalidInput
from apps.workspaces.models import Membership, Workspace

from .codes import normalise_user_code
from .models import DeviceAuthorization

WRONG_CODE_LIMIT = 10  # wrong user codes per user per window
WRONG_CODE_WINDOW = 15 * 60


def _cli_key_policy_problem(workspace: Workspace, now: datetime) -> str | None:
    problem = key_policy_problem(workspace, now + CLI_LIFETIME, now=now)
    if problem:
        return (
            f"{problem} CLI keys last 90 days, so an owner must allow at least that for CLI logins."
        )
    return None


def device_approval_problem(
    user: User, workspace: Workspace, *, scopes: list[str], now: datetime
) -> str | None:
    """Why `user` may not (or no longer) log the CLI in to `workspace` with `scopes`, or None.

    Checked when the person approves and again when the key is minted, since a role, a
    policy or the person's place in the team may change in between. A CLI key never waits
    for an owner, so scopes the approval policy covers for the person's role are refused.
    """
    holder = key_holder_problem(user, workspace, ApiKey.Kind.WORKSPACE)
    if holder or (holder := _cli_key_policy_problem(workspace, now)):
        return holder
    role = device_login_role(user, workspace)
    # Read again, not from `workspace`: an owner may have switched the policy on since.
    policy = Workspace.objects.values_list("key_approval", flat=True).get(pk=workspace.pk)
    if approval_covers(policy, role, scopes):
        return approval_note(policy, role)
    return None


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


def device_login_role(user: User, workspace: Workspace) -> str | None:
    """The role `user` logs in with in `workspace`."""
    return (
        Membership.objects.filter(user=user, workspace=workspace)
        .values_list("role", flat=True)
        .first()
    )


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
    problem = device_approval_problem(user, workspace, scopes=chosen, now=timezone.now())
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
    """Deny a pending login; it goes into the person's security log with where it came from
    (the denial page warns that someone may be trying to get in)."""
    denied = DeviceAuthorization.objects.filter(
        pk=authorization.pk, status=DeviceAuthorization.Status.PENDING
    ).update(status=DeviceAuthorization.Status.DENIED, user=user)
    if denied:
        account_event_record(
            user,
            AccountEvent.Action.CLI_LOGIN_DENIED,
            ip=authorization.requested_ip,
            detail=f"{authorization.device_name}, code {authorization.user_code_display}",
        )
