"""A new secret for a live key: a roll, by its holder, with a grace for the replaced secret,
and a connected app's hourly reissue (OAuth refresh). Its identity (name, scopes, history)
stays the same."""

from datetime import timedelta

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from apps.accounts.models import User
from apps.audit.services import Actor, audit_record
from apps.common.validation import InvalidInput
from apps.workspaces.models import Membership

from . import tokens
from .audit_actions import KEY_ROLLED
from .models import ApiKey, ApiKeyState
from .policy import MCP_LIFETIME
from .services import CreatedApiKey

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
