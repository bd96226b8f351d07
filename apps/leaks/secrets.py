"""Finding the key a named secret belongs to, whatever its state: what a leak report,
`revokeapikey` and RFC 7009's revocation start from."""

from datetime import datetime

from django.utils import timezone

from apps.api_keys import tokens
from apps.api_keys.models import ApiKey


def api_key_find_by_secret(raw: str, *, now: datetime | None = None) -> ApiKey | None:
    """The key a secret belongs to whatever its state, or None (leak reports, operators, RFC 7009).

    A secret replaced by a roll is still the key while its grace lasts: it works, so a leak of
    it or a revocation naming it must reach the key. Past its grace it names nothing.
    """
    if tokens.kind_of(raw) is None:
        return None
    secret_hash = tokens.hash_secret(raw)
    keys = ApiKey.objects.select_related("workspace", "user")
    key = keys.filter(secret_hash=secret_hash).first()
    if key is None:
        key = keys.filter(previous_secret_hash=secret_hash).first()
        if key is not None and not key.rolling_at(now or timezone.now()):
            return None
    return key
