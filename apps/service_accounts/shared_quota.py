"""One allowance for all of a service account's keys (quotaShared, docs/product.md §17).

The account holds the allowance; each of its keys carries a copy of it and `quota_shared`, so
the request's one lookup knows which count to take (the account's, "u<its user's id>") and
when its periods start (at the account's user's creation) without another query.
"""

from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.audit.services import Actor, audit_record
from apps.common.quota_periods import Quota
from apps.common.validation import InvalidInput
from apps.quotas.counting import QuotaHolder, pool_holder
from apps.quotas.uses import QuotaUse, quota_uses
from apps.workspaces.models import ServiceAccount

from .audit_actions import SERVICE_ACCOUNT_UPDATED


def _json(quota: Quota | None) -> dict[str, object] | None:
    return quota.as_json() if quota else None


def service_account_share_quota(
    *, account: ServiceAccount, quota: Quota | None, actor: Actor
) -> ServiceAccount:
    """Make every key of `account` (those it holds now and those it is given later) draw from
    the one allowance `quota`; None ends the sharing, and each key keeps the same quota as its
    own, counted from its creation. Audited before → after. The caller checks that `actor` is
    an owner (apps/service_accounts/services.py)."""
    with transaction.atomic():
        current = ServiceAccount.objects.select_for_update(no_key=True).get(pk=account.pk)
        if current.deleted_at is not None:
            raise InvalidInput("serviceAccount", "This service account was deleted.")
        before = current.shared_quota
        if quota == before:
            return current
        current.shared_quota_requests = quota.requests if quota else None
        current.shared_quota_period = quota.period if quota else ""
        current.save(update_fields=["shared_quota_requests", "shared_quota_period"])
        keys = ApiKey.objects.filter(
            user_id=current.user_id, revoked_at__isnull=True, denied_at__isnull=True
        )
        if quota is None:
            changed = keys.filter(quota_shared=True).update(quota_shared=False)
        else:
            changed = keys.update(
                quota_requests=quota.requests, quota_period=quota.period, quota_shared=True
            )
        audit_record(
            workspace=current.workspace,
            action=SERVICE_ACCOUNT_UPDATED,
            actor=actor,
            subject=current.name,
            data={
                "field": "quotaShared",
                "before": _json(before),
                "after": _json(quota),
                "keys": changed,
            },
        )
    return current


def shared_holder(account: ServiceAccount) -> QuotaHolder | None:
    """The allowance `account`'s keys share, or None when they share none."""
    quota = account.shared_quota
    if quota is None:
        return None
    return pool_holder(account.user_id, quota, account.user.date_joined)


def shared_quota_uses(accounts: Iterable[ServiceAccount]) -> dict[int, QuotaUse]:
    """The current period of each account's shared quota, by account id (one Redis read)."""
    holders = {a.pk: h for a in accounts if (h := shared_holder(a)) is not None}
    uses = quota_uses(holders.values(), timezone.now())
    return {account_id: uses[holder.scope] for account_id, holder in holders.items()}
