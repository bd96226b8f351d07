"""User codes: 8 letters a person reads off a terminal and types on /device."""

import secrets
import unicodedata

from .models import DeviceAuthorization

USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"  # no vowels (no words), no look-alikes
USER_CODE_LENGTH = 8


def normalise_user_code(raw: str) -> str | None:
    """`wdjb-mjht`, `WDJB MJHT`, `WDJB.MJHT`, `WDJB–MJHT` and `WDJBMJHT` are the same code; None
    if it cannot be one. Punctuation, spaces and symbols of any kind (a minus sign for the
    dash) are ignored (RFC 8628 §6.1), and compatibility forms (full-width letters) read as
    the letters they show; a control character is not ignored."""
    text = unicodedata.normalize("NFKC", raw).upper()
    code = "".join(ch for ch in text if unicodedata.category(ch)[0] not in "PZS")
    if len(code) != USER_CODE_LENGTH or any(ch not in USER_CODE_ALPHABET for ch in code):
        return None
    return code


def new_user_code() -> str:
    while True:
        code = "".join(secrets.choice(USER_CODE_ALPHABET) for _ in range(USER_CODE_LENGTH))
        # 20^8 codes; a clash with a pending one is rare, and the database refuses it anyway.
        status = DeviceAuthorization.Status.PENDING
        if not DeviceAuthorization.objects.filter(user_code=code, status=status).exists():
            return code
