"""The API key secret: its format, checksum and keyed hash.

A secret reads `<prefix>_<32 random base62 characters><6 checksum characters>`, e.g.
`gwk_3Jd...`. The prefix tells the kind of key (workspace `gwk`, member `gmk`) so a leaked string
can be recognised by secret scanners, and the CRC32 checksum lets a typo or a random string be
refused offline, without a database query (the idea of GitHub's token format).
"""

import functools
import hashlib
import hmac
import re
import secrets
import zlib

from django.conf import settings

ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
RANDOM_LENGTH = 32  # 32 * log2(62) = 190 bits of entropy
CHECKSUM_LENGTH = 6  # 62**6 > 2**32, so a CRC32 always fits
PREFIXES = {"workspace": "gwk", "member": "gmk"}
SECRET_LENGTH = 3 + 1 + RANDOM_LENGTH + CHECKSUM_LENGTH
_SHAPE = re.compile(rf"(gwk|gmk)_[0-9A-Za-z]{{{RANDOM_LENGTH + CHECKSUM_LENGTH}}}")
_KIND_BY_PREFIX = {prefix: kind for kind, prefix in PREFIXES.items()}


def _base62(number: int, width: int) -> str:
    chars = []
    for _ in range(width):
        number, digit = divmod(number, 62)
        chars.append(ALPHABET[digit])
    return "".join(reversed(chars))


def _checksum(body: str) -> str:
    return _base62(zlib.crc32(body.encode("ascii")), CHECKSUM_LENGTH)


def _random_secret(prefix: str) -> str:
    body = prefix + "_" + "".join(secrets.choice(ALPHABET) for _ in range(RANDOM_LENGTH))
    return body + _checksum(body)


def generate_secret(kind: str) -> str:
    """A new secret for a key of `kind` ("workspace" or "member")."""
    return _random_secret(PREFIXES[kind])


# A connected app's refresh token (OAuth): the same format under its own prefix, so it is never
# taken for a key (`kind_of` refuses it without a query) and scanners can still recognise it.
REFRESH_PREFIX = "grt"


def generate_refresh_token() -> str:
    """A new refresh token for an OAuth grant."""
    return _random_secret(REFRESH_PREFIX)


# A SCIM token (docs/product.md §16): the identity provider's credential for /scim/v2/ only.
# Its own prefix, so no key lookup ever takes it for a key, nor SCIM a key for a token.
SCIM_PREFIX = "gst"
_SCIM_SHAPE = re.compile(rf"gst_[0-9A-Za-z]{{{RANDOM_LENGTH + CHECKSUM_LENGTH}}}")


def generate_scim_token() -> str:
    """A new SCIM token's secret."""
    return _random_secret(SCIM_PREFIX)


def is_scim_token(secret: str) -> bool:
    """Whether `secret` is shaped as a SCIM token with a valid checksum (no query needed)."""
    if _SCIM_SHAPE.fullmatch(secret) is None:
        return False
    body, checksum = secret[:-CHECKSUM_LENGTH], secret[-CHECKSUM_LENGTH:]
    return hmac.compare_digest(_checksum(body), checksum)


def kind_of(secret: str) -> str | None:
    """The kind of key a well-formed secret with a valid checksum belongs to, else None."""
    if _SHAPE.fullmatch(secret) is None:
        return None
    body, checksum = secret[:-CHECKSUM_LENGTH], secret[-CHECKSUM_LENGTH:]
    if not hmac.compare_digest(_checksum(body), checksum):
        return None
    return _KIND_BY_PREFIX[secret[:3]]


def hash_secret(secret: str) -> str:
    """The keyed hash stored at rest: HMAC-SHA256 under API_KEY_HASH_SECRET, in hex."""
    mac = _keyed(settings.API_KEY_HASH_SECRET).copy()
    mac.update(secret.encode())
    return mac.hexdigest()


@functools.lru_cache(maxsize=2)
def _keyed(key: str) -> "hmac.HMAC":
    # The HMAC with its key already mixed in, copied for each secret: a third cheaper than
    # keying it again on every request.
    return hmac.new(key.encode(), digestmod=hashlib.sha256)


def hint_for(secret: str) -> str:
    """The non-secret hint shown in lists: the prefix and the last four characters."""
    return f"{secret[:4]}…{secret[-4:]}"
