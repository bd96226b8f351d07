"""Webhook signing secrets: `whsec_` and 32 random bytes in base64, as Standard Webhooks has
them; kept encrypted with a key derived from SECRET_KEY (they must be read to sign); and the
signatures a delivery carries, made with them."""

import base64
import secrets
from datetime import datetime

from cryptography.fernet import Fernet, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from standardwebhooks.webhooks import Webhook

from .models import WebhookEndpoint

PREFIX = "whsec_"


def new_secret() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def _fernet_of(secret_key: str) -> Fernet:
    derived = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=b"gatehouse webhook secrets"
    ).derive(secret_key.encode())
    return Fernet(base64.urlsafe_b64encode(derived))


def _fernet() -> MultiFernet:
    """Seals with SECRET_KEY; opens with it or any of SECRET_KEY_FALLBACKS, so SECRET_KEY can be
    rotated the way Django rotates it."""
    keys = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return MultiFernet([_fernet_of(key) for key in keys])


def seal(secret: str) -> str:
    return _fernet().encrypt(secret.encode()).decode()


def unseal(sealed: str) -> str:
    return _fernet().decrypt(sealed.encode()).decode()


def signature_headers(
    endpoint: WebhookEndpoint, message_id: str, body: str, at: datetime
) -> dict[str, str]:
    """The three Standard Webhooks headers; while a secret rolls, signed by both secrets."""
    secrets = [unseal(endpoint.secret_encrypted)]
    if endpoint.previous_secret_encrypted and (
        endpoint.previous_secret_expires_at and endpoint.previous_secret_expires_at > at
    ):
        secrets.append(unseal(endpoint.previous_secret_encrypted))
    signatures = [Webhook(s).sign(message_id, at, body) for s in secrets]
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": " ".join(signatures),
        "content-type": "application/json",
    }
