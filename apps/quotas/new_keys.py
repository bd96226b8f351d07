"""The quota a new key gets (docs/product.md §17), whichever door makes it: a member key at
most the workspace's default for member keys (memberQuota), which it gets unless it asks for
less; a service account's key the one quota its account's keys share (quotaShared), when they
share one, and then no other."""

from typing import Any

from apps.common.quota_periods import Quota
from apps.common.validation import InvalidInput
from apps.workspaces.models import ServiceAccount, Workspace


def quota_for_new_key(
    workspace: Workspace, user: Any, *, member: bool, asked: Quota | None
) -> tuple[Quota | None, bool]:
    """(the quota, whether it is the shared one) for a key of `user` that asked for `asked`.
    Runs inside the key's transaction: a service account's row is locked, so a change of its
    sharing waits for the key and then covers it. InvalidInput for a quota it may not have."""
    if member:
        member_quota = Workspace.objects.values_list("member_quota", flat=True).get(pk=workspace.pk)
        if not member_quota:
            return asked, False
        default = Quota(**member_quota)
        if asked is not None and not asked.narrower_than(default):
            raise InvalidInput("quota", f"A member key's quota is at most {default}.")
        return asked or default, False
    if not getattr(user, "is_service_account", False):
        return asked, False
    account = ServiceAccount.objects.select_for_update(no_key=True).filter(user=user).first()
    shared = account.shared_quota if account else None
    if shared is None:
        return asked, False
    if asked is not None and asked != shared:
        raise InvalidInput(
            "quota",
            f"This service account's keys share one quota of {shared}: a key of it has no "
            f"quota of its own. Change the shared quota on the service account.",
        )
    return shared, True
