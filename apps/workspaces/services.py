"""Writes on workspaces and their memberships."""

from typing import Any

from django.db import transaction

from apps.accounts.models import User

from .models import Membership, Workspace
from .validators import clean_workspace_name


def workspace_create(*, name: str, owner: User) -> Workspace:
    """Create a workspace with `owner` as its first owner."""
    with transaction.atomic():
        workspace = Workspace.objects.create(name=clean_workspace_name(name, "name"))
        Membership.objects.create(workspace=workspace, user=owner, role=Membership.Role.OWNER)
    return workspace


def workspace_update(*, workspace: Workspace, changes: dict[str, Any]) -> Workspace:
    """Write the given model fields (already validated) and return the fresh record.

    Only the named columns are written, so two concurrent updates of different fields both
    survive; the row lock orders concurrent writers on PostgreSQL.
    """
    with transaction.atomic():
        current = Workspace.objects.select_for_update().get(pk=workspace.pk)
        for field, value in changes.items():
            setattr(current, field, value)
        if changes:
            current.save(update_fields=list(changes))
    return current
