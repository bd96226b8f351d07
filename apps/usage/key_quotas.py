"""Setting a key's quota (docs/product.md §17): lowering it is narrowing the key, which whoever
may narrow it may do; raising it, changing its period or removing it needs an owner."""

from django.db import transaction

from apps.api.errors import ApiFailure
from apps.api_keys.models import ApiKey
from apps.audit.services import Actor, audit_record
from apps.common.quota_periods import Quota
from apps.common.validation import InvalidInput
from apps.workspaces.models import Membership

from .audit_actions import KEY_QUOTA_SET


def api_key_set_quota(
    *, key: ApiKey, quota: Quota | None, actor: Actor, role: str | None
) -> ApiKey:
    """Give `key` the quota `quota` (None: none), audited before → after.

    ApiFailure insufficient-role when it is not lower and `role` is not an owner's, conflict
    for a key that draws from its service account's shared quota;
    InvalidInput for a key that no longer works.
    """
    with transaction.atomic():
        locked = ApiKey.objects.select_for_update(of=("self",), no_key=True).get(pk=key.pk)
        if not locked.live:
            raise InvalidInput("key", "Only an active or waiting key's quota can change.")
        before = locked.quota
        if locked.quota_shared:
            raise ApiFailure(
                "conflict",
                "This key draws from its service account's shared quota: change that on the "
                "service account (quotaShared), or end the sharing first.",
            )
        if quota == before:
            return locked
        lower = quota is not None and quota.narrower_than(before)
        if not lower and role != Membership.Role.OWNER:
            raise ApiFailure(
                "insufficient-role",
                "Only a workspace owner may raise a key's quota, change its period or remove "
                "it; lowering it is narrowing, which admins may do too.",
            )
        locked.quota_requests = quota.requests if quota else None
        locked.quota_period = quota.period if quota else ""
        locked.save(update_fields=["quota_requests", "quota_period"])
        audit_record(
            workspace=locked.workspace,
            action=KEY_QUOTA_SET,
            actor=actor,
            key=locked,
            subject=f"{locked.name} ({locked.hint})",
            data={
                "before": before.as_json() if before else None,
                "after": quota.as_json() if quota else None,
            },
        )
    return locked
