"""Leaked keys: GitHub's secret-scanning partner reports (docs/product.md §2).

GitHub finds strings shaped like our keys in public code and POSTs them here, signed with ECDSA
P-256 / SHA-256 over the raw body. A report whose signature checks out against a configured,
current public key revokes every reported active key at once, audits `key.leaked` with the URL
where it was found, and e-mails the key's holder. Anything else changes nothing.
"""

import base64
import hashlib
import json
import logging
from dataclasses import dataclass
from functools import cache

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from django.conf import settings
from django.db import transaction

from apps.api_keys.audit_actions import KEY_LEAKED
from apps.api_keys.links import key_links
from apps.api_keys.models import ApiKey
from apps.api_keys.services import api_key_revoke
from apps.audit.services import Actor, audit_record
from apps.common.tasks import send_email
from apps.leaks.secrets import api_key_find_by_secret

from .models import SecretScanningKeySet
from .old_secrets import old_secret_grace_end

logger = logging.getLogger("apps.leaks")
REPORTER = Actor.of_operator("GitHub secret scanning")
MAX_REPORTED_TOKENS = 1000


class ReportRefused(Exception):
    """A report that is not acted on: `reason` is an error-table reason, `message` a sentence."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class PublicKey:
    identifier: str
    key: ec.EllipticCurvePublicKey
    is_current: bool


@cache
def parse_public_keys(raw: str) -> dict[str, PublicKey]:
    """GitHub's key list, as GET /meta/public_keys/secret_scanning returns it
    (`{"public_keys": [{"key_identifier", "key", "is_current"}]}`) or just the list.

    Raises ValueError saying what is wrong with a malformed list.
    """
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        raise ValueError("it is not JSON") from None
    entries = data.get("public_keys") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise ValueError("it holds no list of public keys")
    keys = {}
    for number, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict) or not all(
            isinstance(entry.get(field), str) for field in ("key_identifier", "key")
        ):
            raise ValueError(f"entry {number} needs key_identifier and key strings")
        try:
            key = load_pem_public_key(entry["key"].encode())
        except (ValueError, TypeError):
            raise ValueError(f"the key of entry {number} is not a PEM public key") from None
        if not isinstance(key, ec.EllipticCurvePublicKey):
            raise ValueError(f"the key of entry {number} is not an elliptic-curve key")
        keys[entry["key_identifier"]] = PublicKey(
            entry["key_identifier"], key, bool(entry.get("is_current", True))
        )
    return keys


def configured_public_keys() -> dict[str, PublicKey]:
    """The keys reports are checked against: SECRET_SCANNING_PUBLIC_KEYS and the last set
    fetched from GitHub. A malformed setting (the system check names it) trusts nothing."""
    keys: dict[str, PublicKey] = {}
    stored = SecretScanningKeySet.objects.values_list("body", flat=True).first()
    for raw in (stored or "", settings.SECRET_SCANNING_PUBLIC_KEYS):
        try:
            keys.update(parse_public_keys(raw))
        except ValueError as error:
            logger.error("Secret-scanning public keys ignored: %s.", error)
    return keys


def verify_report_signature(body: bytes, key_identifier: str, signature_b64: str) -> None:
    """Raise ReportRefused unless `signature_b64` signs `body` with a current configured key."""
    if not key_identifier or not signature_b64:
        raise ReportRefused(
            "invalid-signature",
            "Send the Github-Public-Key-Identifier and Github-Public-Key-Signature headers.",
        )
    public = configured_public_keys().get(key_identifier)
    if public is None:
        raise ReportRefused("invalid-signature", "The public key identifier is not known here.")
    if not public.is_current:
        raise ReportRefused(
            "invalid-signature", "The report is signed with a key that is no longer current."
        )
    try:
        signature = base64.b64decode(signature_b64, validate=True)
        public.key.verify(signature, body, ec.ECDSA(hashes.SHA256()))
    except (ValueError, InvalidSignature):
        raise ReportRefused("invalid-signature", "The signature does not match the body.") from None


def _parse(body: bytes) -> list[dict[str, str]]:
    try:
        items = json.loads(body)
    except ValueError:
        raise ReportRefused("invalid-input", "The body is not JSON.") from None
    if not isinstance(items, list) or len(items) > MAX_REPORTED_TOKENS:
        raise ReportRefused(
            "invalid-input", f"The body must be a JSON array of at most {MAX_REPORTED_TOKENS}."
        )
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("token"), str):
            raise ReportRefused("invalid-input", "Every item needs a token string.")
        for field in ("type", "url", "source"):
            if not isinstance(item.get(field, ""), str):
                raise ReportRefused("invalid-input", f"{field} must be a string.")
    return items


def what_it_did_url(key: ApiKey) -> str:
    """Where the key's page shows what it did before the revocation (its blast radius)."""
    return key_links(key, settings.SITE_URL)["page"] + "#blast-radius"


def _tell_the_holder(key: ApiKey, url: str) -> None:
    """Queue the e-mail to the key's holder (sent by a worker, in the transaction of the
    revocation: no mail for a revocation rolled back)."""
    where = f" at {url}" if url else ""
    send_email.enqueue(
        f"Your API key “{key.name}” was found in public and has been revoked",
        f"GitHub found the API key “{key.name}” ({key.hint}) of {key.workspace.name} in a "
        f"public place{where}. It has been revoked, so it no longer works.\n\n"
        "See what it did in the 24 hours before, what it created or changed and where it was "
        f"used from:\n{what_it_did_url(key)}\n\n"
        "Create a new key for whatever used it, and keep it out of code and repositories (use "
        "an environment variable or a secret store).\n",
        [key.user.email],
    )


def leak_report_handle(
    body: bytes, key_identifier: str, signature_b64: str
) -> list[dict[str, str]]:
    """Verify and act on one report; the answer GitHub expects, one entry per reported token."""
    verify_report_signature(body, key_identifier, signature_b64)
    answer = []
    for item in _parse(body):
        token = item["token"]
        key = api_key_find_by_secret(token)  # the secret before a roll, during its grace, too
        if key is not None:
            leaked_key_revoke(key, item.get("url", ""), item.get("source", ""))
            old_secret_grace_end(
                token, named=key, actor=REPORTER, reason="leaked", url=item.get("url", "")
            )
        answer.append(
            {
                "token_hash": hashlib.sha256(token.encode()).hexdigest(),
                "token_type": item.get("type", ""),
                "label": "true_positive" if key is not None else "false_positive",
            }
        )
    return answer


def leaked_key_revoke(key: ApiKey, url: str, source: str) -> None:
    """Revoke a live key (active, or waiting for approval) found in public at `url`, record
    why and tell its holder by e-mail; a key revoked or denied already is left as it is: it
    can never work. Row-locked, so two reports of one key revoke and tell once."""
    with transaction.atomic():
        locked = ApiKey.objects.select_for_update(no_key=True).get(pk=key.pk)
        if locked.revoked_at is not None or locked.denied_at is not None:
            return
        api_key_revoke(key=key, actor=REPORTER)
        audit_record(
            workspace=key.workspace,
            action=KEY_LEAKED,
            actor=REPORTER,
            key=key,
            subject=f"{key.name} ({key.hint})",
            data={"url": url[:2000], "source": source[:100], "whatItDid": what_it_did_url(key)},
        )
        _tell_the_holder(key, url)
