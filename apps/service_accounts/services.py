"""Service accounts (docs/product.md §12): holders of workspace keys that are not people.

A service account is a user row that can never sign in (no password, `is_service_account`,
refused by the authentication backend and the sign-in adapter), an admin membership of one
workspace, and the `ServiceAccount` record saying what it is for. Its keys are ordinary
workspace keys, so everything a key does (scopes, restrictions, policies, usage, the request
log, webhooks, leak reports) works for them unchanged.
"""

import secrets
from datetime import datetime, timedelta
from typing import Any

from allauth.account.models import EmailAddress
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count, Max, Q, QuerySet
from django.utils import timezone

from apps.accounts.models import User
from apps.api_keys.models import ApiKey
from apps.api_keys.policy import clean_description
from apps.api_keys.restrictions import Restrictions
from apps.api_keys.services import CreatedApiKey, api_key_create, api_key_revoke
from apps.audit.services import Actor, audit_record
from apps.common.quota_periods import Quota, quota_from_json
from apps.common.validation import InvalidInput, clean_text
from apps.workspaces.models import Membership, ServiceAccount, Workspace

from .audit_actions import SERVICE_ACCOUNT_CREATED, SERVICE_ACCOUNT_DELETED, SERVICE_ACCOUNT_UPDATED
from .shared_quota import service_account_share_quota

# Reserved by RFC 2606: nothing is ever delivered there (and the adapter sends nothing).
ADDRESS_DOMAIN = "service.gatehouse.invalid"
OWNER_ONLY = "Only owners of the workspace manage its service accounts."


def _description(value: Any) -> str:
    """A service account's optional description: a string of up to 500 characters."""
    if not isinstance(value, str):
        raise InvalidInput("description", "description must be a string.")
    return clean_description(value)


def refuse_unless_owner(workspace: Workspace, user: User | None) -> None:
    is_owner = (
        user is not None
        and Membership.objects.filter(
            workspace=workspace, user=user, role=Membership.Role.OWNER
        ).exists()
    )
    if not is_owner:
        raise PermissionDenied(OWNER_ONLY)


def service_accounts_of(workspace: Workspace) -> QuerySet[ServiceAccount]:
    """The workspace's service accounts (deleted ones left out), with how many live keys each
    holds and when one of them was last used."""
    live = Q(user__api_keys__revoked_at__isnull=True, user__api_keys__denied_at__isnull=True)
    return (
        ServiceAccount.objects.filter(workspace=workspace, deleted_at__isnull=True)
        .select_related("user", "created_by")
        .annotate(
            live_keys=Count("user__api_keys", filter=live, distinct=True),
            last_used_at=Max("user__api_keys__last_used_at"),
        )
    )


UNUSED_ACCOUNT_DAYS = 30


def unused_service_accounts(
    workspace: Workspace, now: datetime | None = None
) -> QuerySet[ServiceAccount]:
    """The service accounts older than 30 days none of whose keys was used in the last 30 days
    (or ever): one made a minute ago is not unused yet (docs/product.md §13)."""
    since = (now or timezone.now()) - timedelta(days=UNUSED_ACCOUNT_DAYS)
    return service_accounts_of(workspace).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=since), created_at__lte=since
    )


def service_account_in(workspace: Workspace, account_id: Any) -> ServiceAccount | None:
    """The live service account `account_id` of `workspace`, or None."""
    if not isinstance(account_id, int):
        return None
    return service_accounts_of(workspace).filter(pk=account_id).first()


def service_account_create(
    *, workspace: Workspace, name: Any, description: Any = "", actor: Actor
) -> ServiceAccount:
    """Make a service account of `workspace`, an admin there; only an owner may (as `actor`)."""
    name = clean_text(name, "name", max_length=100)
    description = _description(description)
    refuse_unless_owner(workspace, actor.user)
    with transaction.atomic():
        user = User.objects.create_user(
            f"svc-{secrets.token_hex(6)}@{ADDRESS_DOMAIN}",
            None,
            full_name=name,
            is_service_account=True,
        )
        # An operator-made user gets a verified address row; a service account gets none, so
        # no sign-in or reset flow can ever find it by address.
        EmailAddress.objects.filter(user=user).delete()
        Membership.objects.create(workspace=workspace, user=user, role=Membership.Role.ADMIN)
        account = ServiceAccount.objects.create(
            workspace=workspace,
            user=user,
            name=name,
            description=description,
            created_by=actor.user,
        )
        audit_record(
            workspace=workspace,
            action=SERVICE_ACCOUNT_CREATED,
            actor=actor,
            subject=name,
            data={"serviceAccount": account.pk, "email": user.email},
        )
    return account


def service_account_update(
    *, account: ServiceAccount, changes: dict[str, Any], actor: Actor
) -> ServiceAccount:
    """Rename a service account, change its description or the quota its keys share
    (`quotaShared`, an API quota object or None); owners only, each change audited."""
    changes = dict(changes)
    sharing = "quotaShared" in changes
    shared = quota_from_json(changes.pop("quotaShared", None), "quotaShared")
    cleaners = {
        "name": lambda value: clean_text(value, "name", max_length=100),
        "description": _description,
    }
    unknown = [field for field in changes if field not in cleaners]
    if unknown:
        raise InvalidInput(unknown[0], f"{unknown[0]} is not a known field.")
    cleaned = {field: cleaners[field](value) for field, value in changes.items()}
    refuse_unless_owner(account.workspace, actor.user)
    with transaction.atomic():
        if sharing:
            service_account_share_quota(account=account, quota=shared, actor=actor)
        current = ServiceAccount.objects.select_for_update(no_key=True).get(pk=account.pk)
        changed = {f: v for f, v in cleaned.items() if getattr(current, f) != v}
        for field, value in changed.items():
            audit_record(
                workspace=current.workspace,
                action=SERVICE_ACCOUNT_UPDATED,
                actor=actor,
                subject=current.name,
                data={"field": field, "before": getattr(current, field), "after": value},
            )
            setattr(current, field, value)
        if changed:
            current.save(update_fields=list(changed))
            if "name" in changed:
                User.objects.filter(pk=current.user_id).update(full_name=changed["name"])
    return current


def service_account_delete(*, account: ServiceAccount, actor: Actor) -> int:
    """Delete a service account (owners): every key of it revoked in the same transaction,
    each audited and announced, and its place in the workspace gone. The record stays, marked
    deleted, so its keys' history still names it. Returns how many keys were revoked."""
    refuse_unless_owner(account.workspace, actor.user)
    with transaction.atomic():
        current = ServiceAccount.objects.select_for_update(no_key=True).get(pk=account.pk)
        if current.deleted_at is not None:
            return 0
        keys = ApiKey.objects.filter(
            user_id=current.user_id, revoked_at__isnull=True, denied_at__isnull=True
        ).select_related("workspace", "user")
        revoked = 0
        for key in keys:
            api_key_revoke(key=key, actor=actor)
            revoked += 1
        Membership.objects.filter(user_id=current.user_id).delete()
        User.objects.filter(pk=current.user_id).update(is_active=False)
        current.deleted_at = timezone.now()
        current.save(update_fields=["deleted_at"])
        audit_record(
            workspace=current.workspace,
            action=SERVICE_ACCOUNT_DELETED,
            actor=actor,
            subject=current.name,
            data={"serviceAccount": current.pk, "keysRevoked": revoked},
        )
    return revoked


def service_account_key_create(
    *,
    account: ServiceAccount,
    name: Any,
    scopes: Any,
    expires_at: datetime | None,
    actor: Actor,
    description: Any = "",
    restrictions: Restrictions | None = None,
    quota: Quota | None = None,
) -> CreatedApiKey:
    """A new key of `account`, made by an owner (`actor`), who receives its secret once. It is
    a workspace key capped by the admin role, and it never waits for approval: the owner who
    makes it is who would approve it."""
    refuse_unless_owner(account.workspace, actor.user)
    if account.deleted_at is not None:
        raise InvalidInput("serviceAccount", "This service account was deleted.")
    # A quota its keys share, it gets (apps/quotas/new_keys.py), whatever the door.
    return api_key_create(
        workspace=account.workspace,
        user=account.user,
        name=name,
        description=description,
        scopes=scopes,
        expires_at=expires_at,
        restrictions=restrictions,
        actor=actor,
        owner_made=True,
        quota=quota,
    )
