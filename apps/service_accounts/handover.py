"""Handing a person's key over to a service account before they leave (docs/product.md §12).

The new key is the service account's, with the old key's name, description, scopes,
restrictions and expiry (capped by the key policy); its secret goes once to the owner who hands
it over. The old key is revoked at once; if the owner chooses a grace, the old secret is
accepted as the new key's replaced secret for 1 or 24 hours, so the integration can be switched
without an outage. During it the old secret acts as the new key (its rights, its revocation,
its next roll end it: apps/api_keys/verification.py), and a leak report naming it ends it
(apps/leaks).
"""

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from apps.api_keys.models import ApiKey, ApiKeyState
from apps.api_keys.policy import MAX_LIFETIME
from apps.api_keys.services import CreatedApiKey, api_key_revoke
from apps.audit.services import Actor, audit_record
from apps.common.validation import InvalidInput
from apps.workspaces.models import ServiceAccount, Workspace

from .audit_actions import KEY_HANDED_OVER
from .services import refuse_unless_owner, service_account_key_create

# How long the old secret may keep working as the new key: none by default.
HANDOVER_GRACE_PERIODS: dict[str, timedelta] = {
    "none": timedelta(0),
    "1h": timedelta(hours=1),
    "24h": timedelta(hours=24),
}


def capped_expiry(workspace: Workspace, expires_at: datetime | None, now: datetime) -> datetime:
    """`expires_at` within what the key policy allows a new key now: the longest lifetime, and
    an expiry where the policy refuses keys without one."""
    longest = now + min(timedelta(days=workspace.key_max_lifetime_days), MAX_LIFETIME)
    if expires_at is None:
        return longest if not workspace.key_allow_no_expiry else None  # type: ignore[return-value]
    return min(expires_at, longest)


def key_hand_over(
    *, key: ApiKey, account: ServiceAccount, grace: timedelta, actor: Actor
) -> CreatedApiKey:
    """Hand `key`, a person's live workspace key, over to `account` (an owner, as `actor`):
    a new key of the service account like it, the old one revoked, audited `key.handed_over`
    on both. InvalidInput for a key that cannot be handed over, PermissionDenied for a
    non-owner."""
    if grace not in HANDOVER_GRACE_PERIODS.values():
        raise InvalidInput("grace", "Choose a grace period of none, 1 hour or 24 hours.")
    if account.workspace_id != key.workspace_id or account.deleted_at is not None:
        raise InvalidInput("serviceAccount", "Choose a service account of this workspace.")
    if key.user.is_service_account or key.kind != ApiKey.Kind.WORKSPACE or key.tag:
        raise InvalidInput(
            "key", "Only a person's own workspace key can be handed over (not a CLI or app key)."
        )
    refuse_unless_owner(key.workspace, actor.user)
    if actor.user is not None and actor.user.pk == key.user_id:
        raise InvalidInput(
            "key",
            "Your own key is not handed over: roll it, or make a key of the service account.",
        )
    now = timezone.now()
    with transaction.atomic():
        old = (
            ApiKey.objects.select_for_update(of=("self",), no_key=True)
            .select_related("workspace", "user")
            .get(pk=key.pk)
        )
        # A suspended holder's keys are handed over too (docs/product.md §16): the
        # integration they serve goes on while the person is away.
        if old.state_at(now) not in (ApiKeyState.ACTIVE, ApiKeyState.SUSPENDED):
            raise InvalidInput(
                "key", f"Only an active key can be handed over; this one is {old.state_at(now)}."
            )
        if grace and old.suspended_at is not None:
            # The person's secret stays paused while they are: no grace lends it to the new key.
            raise InvalidInput(
                "grace",
                "Its holder is suspended, so their old secret gets no grace: hand it over with "
                "none, and give the integration the new secret.",
            )
        # Its quota goes with it, unless the account's keys share one, which it joins.
        current = ServiceAccount.objects.select_for_update(no_key=True).get(pk=account.pk)
        created = service_account_key_create(
            account=account,
            name=old.name,
            description=old.description,
            scopes=list(old.scopes),
            expires_at=capped_expiry(old.workspace, old.expires_at, now),
            restrictions=old.restrictions,
            actor=actor,
            quota=None if current.shared_quota else old.quota,
        )
        new = created.key
        if grace:
            new.previous_secret_hash = old.secret_hash
            new.previous_secret_expires_at = now + grace
            new.save(update_fields=["previous_secret_hash", "previous_secret_expires_at"])
        api_key_revoke(key=old, actor=actor)
        # One event, on the new key; the old key's page finds it by `fromKey` (key_pages).
        audit_record(
            workspace=old.workspace,
            action=KEY_HANDED_OVER,
            actor=actor,
            key=new,
            subject=f"{old.name} ({old.hint} → {new.hint})",
            data={
                "fromKey": {"id": old.pk, "hint": old.hint, "holder": old.user.email},
                "toKey": {"id": new.pk, "hint": new.hint},
                "serviceAccount": {"id": account.pk, "name": account.name},
                "oldSecretStopsAt": (now + grace).isoformat(),
            },
        )
    return CreatedApiKey(key=new, secret=created.secret)
