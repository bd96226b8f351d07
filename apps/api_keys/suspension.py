"""A holder suspended by the workspace's identity provider pauses their keys there, and a
restored one gets them back (docs/product.md §16): the receivers of `holder_suspended` and
`holder_restored`, in the transaction of the change. The pause is a column on the row every
request's lookup reads already, so it costs the hot path no query."""

from datetime import datetime
from typing import Any

from apps.accounts.models import User
from apps.workspaces.models import Workspace

from .models import ApiKey


def api_keys_suspend_for(*, workspace: Workspace, user: User, at: datetime, **_signal: Any) -> int:
    """Pause every live key of `user` in `workspace` (revoked and denied ones stay as they
    are). Returns how many."""
    return ApiKey.objects.filter(
        workspace=workspace,
        user=user,
        revoked_at__isnull=True,
        denied_at__isnull=True,
        suspended_at__isnull=True,
    ).update(suspended_at=at)


def api_keys_restore_for(*, workspace: Workspace, user: User, at: datetime, **_signal: Any) -> int:
    """Let the keys paused by a suspension work again; the ones revoked or expired meanwhile
    stay so, and nothing about a key widens. Returns how many still work."""
    paused = ApiKey.objects.filter(workspace=workspace, user=user, suspended_at__isnull=False)
    working = paused.current(at).count()
    paused.update(suspended_at=None)
    return working
