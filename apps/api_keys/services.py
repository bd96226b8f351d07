"""A key's life: create, roll, rename and describe, narrow, revoke. Every change is audited in
its own transaction; views, commands, the device flow and tests all call these."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from apps.accounts.models import User
from apps.audit.services import Actor, audit_record
from apps.common.quota_periods import Quota
from apps.common.validation import InvalidInput, clean_text
from apps.quotas.new_keys import quota_for_new_key
from apps.workspaces.models import Membership, Workspace

from . import tokens
from .audit_actions import (
    KEY_CREATED,
    KEY_REVOKED,
    KEY_ROLLED,
    KEY_UPDATED,
    MEMBER_KEY_CREATED,
    MEMBER_KEY_REVOKED,
)
from .creation_checks import KEY_MANAGER_ROLES as KEY_MANAGER_ROLES
from .creation_checks import check_grants, clean_new_expiry
from .models import ApiKey, ApiKeyState
from .policy import (
    MCP_LIFETIME,
    approval_covers,
    approval_note,
    clean_description,
    clean_scopes,
    key_holder_problem,
)
from .restrictions import Restrictions
from .signals import key_waiting


@dataclass(frozen=True)
class CreatedApiKey:
    """A freshly created key with its plaintext secret: the only place the secret ever exists."""

    key: ApiKey
    secret: str


def api_key_create(
    *,
    workspace: Workspace,
    user: User,
    name: str,
    scopes: Any,
    expires_at: datetime | None,
    kind: str = ApiKey.Kind.WORKSPACE,
    tag: str = ApiKey.Tag.NONE,
    actor: Actor | None = None,
    description: str = "",
    installation_id: str | None = None,
    restrictions: Restrictions | None = None,
    owner_made: bool = False,
    quota: Quota | None = None,
) -> CreatedApiKey:
    """Create a key for `user` in `workspace` and return it with its secret.

    `expires_at=None` means no expiry. A CLI-tagged key always lives exactly 90 days, so
    `expires_at` must be None for it; `installation_id` names the CLI installation that logged
    in (one live key each, which the database enforces). `restrictions` and `quota` limit it.
    InvalidInput for a bad name, scopes, expiry or restriction; audited as `actor` (default: user).

    A key the workspace's approval policy covers is created waiting (pending) and the owners
    are asked; CLI and MCP keys never wait, so such a key is refused (their pages offer only
    what the policy leaves free). A service account's key an owner makes (`owner_made`) never
    waits: the owner is who would approve it.
    """
    now = timezone.now()
    name = clean_text(name, "name", max_length=100)
    description = clean_description(description)
    scopes = clean_scopes(scopes, kind=kind)
    expires_at = clean_new_expiry(workspace, expires_at, tag=tag, now=now)
    restrictions = restrictions or Restrictions()
    check_grants(workspace, user, kind, scopes, restrictions)
    secret = tokens.generate_secret(kind)
    with transaction.atomic():
        if problem := key_holder_problem(user, workspace, kind):
            raise InvalidInput("user", problem)
        role = (
            Membership.objects.filter(user=user, workspace=workspace)
            .values_list("role", flat=True)
            .first()
        )
        policy = Workspace.objects.values_list("key_approval", flat=True).get(pk=workspace.pk)
        member = kind == ApiKey.Kind.MEMBER
        quota, shared = quota_for_new_key(workspace, user, member=member, asked=quota)
        waits = approval_covers(policy, role, scopes) and not owner_made
        if waits and tag in (ApiKey.Tag.CLI, ApiKey.Tag.MCP):
            raise InvalidInput("scopes", approval_note(policy, role) or "")
        key = ApiKey(
            workspace=workspace,
            user=user,
            kind=kind,
            name=name,
            description=description,
            scopes=scopes,
            secret_hash=tokens.hash_secret(secret),
            hint=tokens.hint_for(secret),
            tag=tag,
            created_at=now,
            expires_at=expires_at,
            installation_id=installation_id,
            approval_requested_at=now if waits else None,
            quota_requests=quota.requests if quota else None,
            quota_period=quota.period if quota else "",
            quota_shared=shared,
        )
        key.set_restrictions(restrictions)
        key.save(force_insert=True)
        audit_record(
            workspace=workspace,
            action=MEMBER_KEY_CREATED if kind == ApiKey.Kind.MEMBER else KEY_CREATED,
            actor=actor or Actor.of_user(user),
            key=key,
            subject=f"{key.name} ({key.hint})",
            data={
                "scopes": scopes,
                "expiresAt": expires_at.isoformat() if expires_at else None,
                "tag": tag,
                **({"restrictions": restrictions.as_json()} if not restrictions.is_empty else {}),
                **({"waitsForApproval": True} if waits else {}),
                **({"quota": quota.as_json()} if quota else {}),
            },
        )
        if waits:
            key_waiting.send(sender=ApiKey, key=key, actor=actor or Actor.of_user(user))
    return CreatedApiKey(key=key, secret=secret)


# The grace periods offered for a roll: how long the replaced secret keeps working.
ROLL_GRACE_PERIODS: dict[str, timedelta] = {
    "none": timedelta(0),
    "1h": timedelta(hours=1),
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
}


def api_key_roll(*, key: ApiKey, grace: timedelta, actor: Actor) -> CreatedApiKey:
    """Give an active key a new secret, keeping its identity (name, scopes, expiry, history).

    The replaced secret keeps working for `grace` and then stops at that instant, as an expiry
    would; with no grace it stops at once. A secret still in the grace of an earlier roll stops
    now: only the last replaced secret is honoured. Raises InvalidInput for an inactive key and
    PermissionDenied unless `actor` is the key's holder: nobody else ever receives its secret.
    """
    if grace not in ROLL_GRACE_PERIODS.values():
        raise InvalidInput("grace", "Choose a grace period of none, 1 hour, 24 hours or 7 days.")
    now = timezone.now()
    secret = tokens.generate_secret("member" if key.kind == ApiKey.Kind.MEMBER else "workspace")
    with transaction.atomic():
        locked = (
            ApiKey.objects.select_for_update(of=("self",), no_key=True)
            .select_related("workspace", "user")
            .get(pk=key.pk)
        )
        if actor.user is None or (
            actor.user.pk != locked.user_id and not owner_of_service_key(actor.user, locked)
        ):
            # A roll hands out a secret that acts as the key's holder: an owner or admin who
            # could roll a teammate's key would take that person's powers (docs/product.md §2).
            raise PermissionDenied("Only the key's own holder can roll it; you can revoke it.")
        if locked.state_at(now) != ApiKeyState.ACTIVE:
            raise InvalidInput(
                "key", f"Only an active key can be rolled; this one is {locked.state_at(now)}."
            )
        previous_hint = locked.hint
        locked.previous_secret_hash = locked.secret_hash if grace else None
        locked.previous_secret_expires_at = now + grace if grace else None
        locked.secret_hash = tokens.hash_secret(secret)
        locked.hint = tokens.hint_for(secret)
        locked.rolled_at = now
        locked.previous_secret_last_used_at = None  # the replaced secret has made no call yet
        locked.save(
            update_fields=[
                "previous_secret_hash",
                "previous_secret_expires_at",
                "previous_secret_last_used_at",
                "secret_hash",
                "hint",
                "rolled_at",
            ]
        )
        audit_record(
            workspace=locked.workspace,
            action=KEY_ROLLED,
            actor=actor,
            key=locked,
            subject=f"{locked.name} ({locked.hint})",
            data={
                "previousHint": previous_hint,
                "oldSecretStopsAt": (now + grace).isoformat(),
            },
        )
    return CreatedApiKey(key=locked, secret=secret)


def owner_of_service_key(user: User, key: ApiKey) -> bool:
    """Whether `user` is an owner of the workspace of `key`, a service account's key: owners
    roll and receive those secrets (docs/product.md §12)."""
    return (
        key.user.is_service_account
        and Membership.objects.filter(
            workspace_id=key.workspace_id, user=user, role=Membership.Role.OWNER
        ).exists()
    )


def api_key_reissue(*, key: ApiKey) -> CreatedApiKey:
    """A connected app's key for its next hour (OAuth refresh): a new secret and a new expiry,
    the old secret stopped at once, as a roll without grace. An expired key is renewed too;
    a revoked one never (InvalidInput). Audited by the caller, at most daily."""
    now = timezone.now()
    secret = tokens.generate_secret("member" if key.kind == ApiKey.Kind.MEMBER else "workspace")
    renewed = ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(
        secret_hash=tokens.hash_secret(secret),
        hint=tokens.hint_for(secret),
        rolled_at=now,
        expires_at=now + MCP_LIFETIME,
        previous_secret_hash=None,
        previous_secret_expires_at=None,
    )
    if not renewed:
        raise InvalidInput("key", "This key was revoked.")
    key.refresh_from_db()
    return CreatedApiKey(key=key, secret=secret)


def api_key_update_details(*, key: ApiKey, name: Any, description: Any, actor: Actor) -> ApiKey:
    """Rename a key or change its description; each changed field is audited before → after."""
    name = clean_text(name, "name", max_length=100)
    description = clean_description(description)
    with transaction.atomic():
        locked = (
            ApiKey.objects.select_for_update(of=("self",), no_key=True)
            .select_related("workspace")
            .get(pk=key.pk)
        )
        changes = {
            field: (getattr(locked, field), value)
            for field, value in (("name", name), ("description", description))
            if getattr(locked, field) != value
        }
        if changes:
            for field, (_, after) in changes.items():
                setattr(locked, field, after)
            locked.save(update_fields=list(changes))
            for field, (before, after) in changes.items():
                audit_record(
                    workspace=locked.workspace,
                    action=KEY_UPDATED,
                    actor=actor,
                    key=locked,
                    subject=f"{locked.name} ({locked.hint})",
                    data={"field": field, "before": before, "after": after},
                )
    return locked


def api_key_revoke(*, key: ApiKey, actor: Actor, reason: str = "") -> ApiKey:
    """Revoke a key for good; it fails on the very next request. Revoking twice changes nothing.
    A `reason` ("idle") goes into the audit event and its webhook.

    Only revoked_at and revoked_by are written: a full save() could write back stale fields.
    """
    now = timezone.now()
    with transaction.atomic():
        # A denied key is final too: revoking it changes nothing.
        revoked = ApiKey.objects.filter(
            pk=key.pk, revoked_at__isnull=True, denied_at__isnull=True
        ).update(revoked_at=now, revoked_by=actor.user)
        key.refresh_from_db(fields=["revoked_at", "revoked_by"])
        if revoked:
            member = key.kind == ApiKey.Kind.MEMBER
            audit_record(
                workspace=key.workspace,
                action=MEMBER_KEY_REVOKED if member else KEY_REVOKED,
                actor=actor,
                key=key,
                subject=f"{key.name} ({key.hint})",
                data={"reason": reason} if reason else None,
            )
    return key
