"""A key's life: create, rename and describe, revoke (a new secret for it: rolling.py). Every
change is audited in its own transaction; views, commands, the device flow and tests all call
these."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

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
    KEY_UPDATED,
    MEMBER_KEY_CREATED,
    MEMBER_KEY_REVOKED,
)
from .creation_checks import KEY_MANAGER_ROLES as KEY_MANAGER_ROLES
from .creation_checks import check_grants, clean_new_expiry
from .models import ApiKey
from .policy import (
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
