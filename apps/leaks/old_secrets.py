"""A handed-over key's old secret, named by whoever holds it: a leak report, an operator's
`revokeapikey`, or the holder's own RFC 7009 revocation. The key it belonged to is revoked
already; during the hand-over's grace its secret still acts as the new key (docs/product.md
§12), and naming it anywhere a secret is revoked ends that at once. The new key, whose own
secret was never named, goes on."""

from django.db import transaction
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.api_keys.tokens import hash_secret
from apps.audit.services import Actor, audit_record

from .audit_actions import KEY_GRACE_ENDED


def old_secret_grace_end(
    raw: str, *, named: ApiKey, actor: Actor, reason: str, url: str = ""
) -> int:
    """End the grace of every key `raw` is still the old secret of, other than `named` (the key
    the secret was found to be: a rolled key's own old secret is revoked with it). Each gets a
    `key.grace_ended` event with `reason` ("leaked", "revoked"). How many there were."""
    now = timezone.now()
    with transaction.atomic():
        successors = (
            ApiKey.objects.select_for_update(of=("self",), no_key=True)
            .filter(previous_secret_hash=hash_secret(raw), previous_secret_expires_at__gt=now)
            .exclude(pk=named.pk)
        )
        ended = list(successors.select_related("workspace", "user"))
        for successor in ended:
            ApiKey.objects.filter(pk=successor.pk).update(previous_secret_expires_at=now)
            audit_record(
                workspace=successor.workspace,
                action=KEY_GRACE_ENDED,
                actor=actor,
                key=successor,
                subject=f"{successor.name} ({successor.hint})",
                data={"reason": reason, **({"url": url[:2000]} if url else {})},
            )
    return len(ended)
