"""What would break if a person left: their keys used in the last 30 days, with what usage and
the request log say of them (requests, last use, addresses, operations). The Remove page and a
demotion show it before anything is revoked (docs/product.md §12)."""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, Sum
from django.utils import timezone

from apps.accounts.models import User
from apps.api_keys.models import ApiKey
from apps.request_log.models import RequestLogEntry
from apps.usage.models import KeyUsageHour
from apps.workspaces.models import Workspace

IN_USE_WITHIN = timedelta(days=30)
ADDRESSES_SHOWN = 5
OPERATIONS_SHOWN = 6


@dataclass
class KeyInUse:
    """One key of a leaving person that something still uses."""

    key: ApiKey
    requests: int = 0
    addresses: list[str] = field(default_factory=list)
    operations: list[str] = field(default_factory=list)

    @property
    def can_be_handed_over(self) -> bool:
        """A person's own workspace key (not a CLI login or a connected app's hourly key)."""
        return self.key.kind == ApiKey.Kind.WORKSPACE and not self.key.tag


def keys_in_use(workspace: Workspace, user: User, now: datetime | None = None) -> list[KeyInUse]:
    """The live keys of `user` in `workspace` used in the last 30 days, most requests first."""
    now = now or timezone.now()
    since = now - IN_USE_WITHIN
    keys = {
        key.pk: KeyInUse(key=key)
        for key in ApiKey.objects.current(now)
        .filter(workspace=workspace, user=user, last_used_at__gte=since)
        .select_related("user")
    }
    if not keys:
        return []
    by_operation = (
        KeyUsageHour.objects.filter(key_id__in=keys, hour__gte=since)
        .values("key_id", "operation")
        .annotate(total=Sum("count"))
        .order_by("-total")
    )
    for row in by_operation:
        in_use = keys[row["key_id"]]
        in_use.requests += row["total"]
        if len(in_use.operations) < OPERATIONS_SHOWN:
            in_use.operations.append(row["operation"])
    addresses = (
        RequestLogEntry.objects.filter(
            workspace_id=workspace.pk, key_id__in=list(keys), at__gte=since
        )
        .exclude(client_ip=None)
        .values("key_id", "client_ip")
        .annotate(seen=Count("id"))
        .order_by("-seen")
    )
    for seen in addresses:
        in_use = keys[seen["key_id"]]
        if len(in_use.addresses) < ADDRESSES_SHOWN and seen["client_ip"]:
            in_use.addresses.append(seen["client_ip"])
    return sorted(keys.values(), key=lambda k: (-k.requests, k.key.name))
