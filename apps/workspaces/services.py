"""Writes on workspaces and their memberships."""

from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.accounts.models import User
from apps.audit.services import Actor, audit_record
from apps.common.validation import InvalidInput

from .audit_actions import (
    MEMBER_RESTORED,
    MEMBER_SUSPENDED,
    SETTINGS_CHANGED,
    TEAM_MEMBER_REMOVED,
    TEAM_ROLE_CHANGED,
)
from .models import Membership, Workspace
from .selectors import STAFF_ROLES
from .signals import (
    holder_restored,
    holder_suspended,
    keys_changed_by,
    place_removed,
    revoke_keys_of_removed,
)
from .validators import clean_workspace_name


def workspace_create(*, name: str, owner: User) -> Workspace:
    """Create a workspace with `owner` as its first owner."""
    with transaction.atomic():
        workspace = Workspace.objects.create(name=clean_workspace_name(name, "name"))
        Membership.objects.create(workspace=workspace, user=owner, role=Membership.Role.OWNER)
    return workspace


def workspace_update(*, workspace: Workspace, changes: dict[str, Any], actor: Actor) -> Workspace:
    """Write the given model fields (already validated) and return the fresh record.

    Only the named columns are written, so two concurrent updates of different fields both
    survive; the row lock orders concurrent writers on PostgreSQL. Each field that really
    changes gets an audit event with its value before and after.
    """
    with transaction.atomic():
        current = Workspace.objects.select_for_update(no_key=True).get(pk=workspace.pk)
        changed = {f: v for f, v in changes.items() if getattr(current, f) != v}
        for field, value in changed.items():
            audit_record(
                workspace=current,
                action=SETTINGS_CHANGED,
                actor=actor,
                subject=field,
                data={"field": field, "before": getattr(current, field), "after": value},
            )
            setattr(current, field, value)
        if changed:
            current.save(update_fields=list(changed))
    return current


def _lock_owners(workspace: Workspace) -> int:
    """Lock the workspace's owner rows and count the active ones (not suspended by the
    identity provider), so two concurrent changes can never leave a workspace without an owner
    who can open it."""
    owners = Membership.objects.select_for_update(no_key=True).filter(
        workspace=workspace, role=Membership.Role.OWNER
    )
    return sum(1 for owner in owners if owner.suspended_at is None)


def team_change_role(*, membership: Membership, role: str, actor: Actor) -> Membership:
    """Make a teammate owner or admin; the last owner cannot stop being one."""
    if role not in STAFF_ROLES:
        raise InvalidInput("role", "The role must be owner or admin.")
    with transaction.atomic():
        owners = _lock_owners(membership.workspace)
        current = Membership.objects.select_for_update(no_key=True).get(pk=membership.pk)
        if current.role == role:
            return current
        if current.role == Membership.Role.OWNER and current.suspended_at is None and owners <= 1:
            raise InvalidInput("role", "A workspace needs an owner: make someone else owner first.")
        before = current.role
        current.role = role
        current.save(update_fields=["role"])
        audit_record(
            workspace=current.workspace,
            action=TEAM_ROLE_CHANGED,
            actor=actor,
            subject=current.user.email,
            data={"email": current.user.email, "before": before, "after": role},
        )
    return current


def team_remove(*, membership: Membership, actor: Actor) -> None:
    """Take a teammate off the workspace and revoke their keys in it; never the last owner."""
    with transaction.atomic():
        owners = _lock_owners(membership.workspace)
        current = Membership.objects.select_for_update(no_key=True).get(pk=membership.pk)
        if current.role == Membership.Role.OWNER and current.suspended_at is None and owners <= 1:
            raise InvalidInput("email", "The last owner cannot be removed.")
        revoke_keys_of_removed(
            workspace=current.workspace, user=current.user, actor=actor, member_keys_only=False
        )
        audit_record(
            workspace=current.workspace,
            action=TEAM_MEMBER_REMOVED,
            actor=actor,
            subject=current.user.email,
            data={"email": current.user.email, "role": current.role},
        )
        current.delete()
        place_removed.send(
            sender=Membership, workspace=current.workspace, user=current.user, actor=actor
        )


LAST_OWNER_STAYS = (
    "{email} is the last active owner of {workspace}: a workspace needs an owner who can open "
    "it. Make someone else an owner first."
)


def team_suspend(*, membership: Membership, actor: Actor) -> tuple[Membership, int]:
    """Suspend a teammate at the identity provider's word (docs/product.md §16): the workspace
    closes to them and every live key of theirs in it answers `suspended-key`; nothing is
    deleted. Never the last active owner (InvalidInput). Returns the membership and how many
    keys were suspended; suspending someone already suspended changes nothing."""
    with transaction.atomic():
        owners = _lock_owners(membership.workspace)
        current = Membership.objects.select_for_update(no_key=True).get(pk=membership.pk)
        if current.suspended_at is not None:
            return current, 0
        if current.role == Membership.Role.OWNER and owners <= 1:
            raise InvalidInput(
                "active",
                LAST_OWNER_STAYS.format(email=current.user.email, workspace=current.workspace),
            )
        current.suspended_at = current.updated_at = timezone.now()
        current.save(update_fields=["suspended_at", "updated_at"])
        keys = keys_changed_by(
            holder_suspended,
            workspace=current.workspace,
            user=current.user,
            at=current.suspended_at,
        )
        audit_record(
            workspace=current.workspace,
            action=MEMBER_SUSPENDED,
            actor=actor,
            subject=current.user.email,
            data={"email": current.user.email, "role": current.role, "keysSuspended": keys},
        )
    return current, keys


def team_restore(*, membership: Membership, actor: Actor) -> tuple[Membership, int]:
    """Restore a suspended teammate: the workspace opens to them again and the keys that were
    suspended work again, unless revoked or expired in between. Returns the membership and
    how many keys came back; restoring someone not suspended changes nothing."""
    with transaction.atomic():
        current = Membership.objects.select_for_update(no_key=True).get(pk=membership.pk)
        if current.suspended_at is None:
            return current, 0
        suspended_at, current.suspended_at = current.suspended_at, None
        current.updated_at = timezone.now()
        current.save(update_fields=["suspended_at", "updated_at"])
        keys = keys_changed_by(
            holder_restored, workspace=current.workspace, user=current.user, at=timezone.now()
        )
        audit_record(
            workspace=current.workspace,
            action=MEMBER_RESTORED,
            actor=actor,
            subject=current.user.email,
            data={
                "email": current.user.email,
                "role": current.role,
                "suspendedAt": suspended_at.isoformat(),
                "keysRestored": keys,
            },
        )
    return current, keys
