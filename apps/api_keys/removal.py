"""A holder who left takes their keys with them (docs/product.md §2): the receiver of the
`holder_removed` signal, in the transaction of the removal."""

from typing import Any

from apps.accounts.models import User
from apps.audit.services import Actor
from apps.workspaces.models import Workspace

from .models import ApiKey
from .services import api_key_revoke


def api_keys_revoke_for_removed(
    *, workspace: Workspace, user: User, actor: Actor, member_keys_only: bool, **_signal: Any
) -> int:
    """Revoke the live keys of a person who left `workspace` (the `holder_removed` signal):
    all of them, or only their member keys; each revocation audited. Returns how many."""
    keys = ApiKey.objects.filter(
        workspace=workspace, user=user, revoked_at__isnull=True, denied_at__isnull=True
    )
    if member_keys_only:
        keys = keys.filter(kind=ApiKey.Kind.MEMBER)
    revoked = 0
    for key in keys.select_related("workspace", "user"):
        api_key_revoke(key=key, actor=actor)
        revoked += 1
    return revoked
