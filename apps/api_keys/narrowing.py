"""Making a key do less: fewer scopes, tighter restrictions; never the reverse."""

from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import transaction

from apps.audit.services import Actor, audit_record
from apps.common.dates import moment_text
from apps.common.validation import InvalidInput

from .audit_actions import KEY_NARROWED
from .choosable import check_chosen_exist
from .models import ApiKey
from .policy import clean_scopes
from .restrictions import Restrictions


def api_key_narrow(
    *,
    key: ApiKey,
    actor: Actor,
    scopes: Any = None,
    restrictions: dict[str, Any] | None = None,
) -> ApiKey:
    """Take scopes away from a key or tighten its restrictions, never the reverse.

    `scopes` (None: unchanged) is the whole new set; `restrictions` holds the Restrictions
    fields to change. Each change is audited before → after. Raises InvalidInput for anything
    that would widen the key, and for a key that is not active.
    """
    with transaction.atomic():
        locked = (
            ApiKey.objects.select_for_update(of=("self",), no_key=True)
            .select_related("workspace", "user")
            .get(pk=key.pk)
        )
        kept = locked.scopes if scopes is None else clean_scopes(scopes, kind=locked.kind)
        added = set(kept) - set(locked.scopes)
        if added:
            raise InvalidInput(
                "scopes",
                f"A key can only be narrowed here; {', '.join(sorted(added))} would widen it. "
                "Create a new key for more permissions.",
            )
        before = locked.restrictions
        after = before.updated(restrictions or {})
        if problem := after.wider_than(before, default_rate=settings.API_RATE_LIMIT_PER_MINUTE):
            raise InvalidInput(
                "restrictions", f"A key can only be narrowed, and {problem}. Create a new key."
            )
        if after != before:
            member_id = locked.user_id if locked.kind == ApiKey.Kind.MEMBER else None
            check_chosen_exist(after, workspace_id=locked.workspace_id, member_id=member_id)
        if not locked.live:
            raise InvalidInput("key", "Only an active or waiting key can be narrowed.")
        changes: list[dict[str, Any]] = []
        if set(kept) != set(locked.scopes):
            changes.append({"before": list(locked.scopes), "after": kept})
            locked.scopes = kept
        if after != before:
            changes.append(
                {"field": "restrictions", "before": before.as_json(), "after": after.as_json()}
            )
            locked.set_restrictions(after)
        if changes:
            locked.save(update_fields=["scopes", *locked.set_restrictions(after)])
        for data in changes:
            audit_record(
                workspace=locked.workspace,
                action=KEY_NARROWED,
                actor=actor,
                key=locked,
                subject=f"{locked.name} ({locked.hint})",
                data=data,
            )
    return locked


def wider_than_key(
    caller: ApiKey,
    *,
    scopes: list[str],
    restrictions: Restrictions,
    expires_at: datetime | None,
) -> str | None:
    """Why a key with these powers would be wider than `caller`, or None when it is not: its
    scopes a subset of the caller's, its restrictions at least as tight, and it expires no
    later. What a key may mint, or roll and so receive the secret of (docs/product.md §3.6)."""
    extra = sorted(set(scopes) - set(caller.scopes))
    if extra:
        return f"it would hold {extra[0]}, which this key does not"
    default_rate = settings.API_RATE_LIMIT_PER_MINUTE
    if problem := restrictions.wider_than(caller.restrictions, default_rate=default_rate):
        return problem
    if caller.expires_at is not None and (expires_at is None or expires_at > caller.expires_at):
        return f"it would outlive this key, which expires {moment_text(caller.expires_at, UTC)}"
    return None
