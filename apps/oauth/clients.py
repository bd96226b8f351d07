"""Who may sign in: the CLI (built in), apps registered by RFC 7591, and apps that name a
Client ID Metadata Document (an https `client_id` whose JSON is fetched, within limits, and
kept until its HTTP caching headers say it is stale)."""

import json
import re
import ssl
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx
from authlib.oauth2.rfc6749.errors import InvalidClientError
from django.conf import settings
from django.utils import timezone

from apps.common.validation import NAME_FORBIDDEN_CATEGORIES
from apps.common.wording import pluralize
from apps.metering.limits import rate_limit_take
from apps.webhooks.destinations import DestinationRefused, guarded_client, time_limit

from .models import OAuthClient
from .redirects import redirect_uris_clean

CLI_CLIENT_ID = "gatehouse-cli"
DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
APP_GRANT_TYPES = ["authorization_code", "refresh_token"]

DOCUMENT_MAX_BYTES = 5 * 1024
DOCUMENT_TIMEOUT_SECONDS = 5.0
DOCUMENT_CACHE_DEFAULT = timedelta(hours=1)
DOCUMENT_CACHE_MIN = timedelta(minutes=5)
DOCUMENT_CACHE_MAX = timedelta(days=1)


def cli_client() -> OAuthClient:
    """`gatehouse login`: a public client of the device grant alone (never saved)."""
    return OAuthClient(
        client_id=CLI_CLIENT_ID,
        source=OAuthClient.Source.BUILT_IN,
        client_name="Gatehouse CLI",
        grant_types=[DEVICE_CODE_GRANT],
    )


def is_document_client_id(client_id: str) -> bool:
    """An https address: a Client ID Metadata Document (checked further before a fetch)."""
    return client_id.startswith("https://")


def _document_address_problem(client_id: str) -> str | None:
    """What makes an https client_id unusable before any connection is tried."""
    try:
        parts = urlsplit(client_id)
        parts.port  # noqa: B018 - raises for a port out of range
        (parts.hostname or "").encode("idna")
        httpx.URL(client_id)
    except (ValueError, UnicodeError, httpx.InvalidURL):
        return "is not a valid https address"
    if not parts.hostname or parts.path in ("", "/"):
        return "must be an https address with a path"
    if len(client_id) > 2000 or not client_id.isascii() or parts.username or parts.fragment:
        return (
            "must be a plain https address (ASCII, no user, no fragment, at most 2000 characters)"
        )
    if any(ch.isspace() or ord(ch) < 0x20 or ch == "%" and "%00" in client_id for ch in client_id):
        return "contains characters an address may not"
    return None


def oauth_client_find(client_id: str) -> OAuthClient | None:
    """The client a `client_id` names, fetching its metadata document when it is one and its
    kept copy is stale. Raises Authlib's InvalidClientError saying why a document is refused."""
    if client_id == CLI_CLIENT_ID:
        return cli_client()
    client = OAuthClient.objects.filter(client_id=client_id).first()
    if not is_document_client_id(client_id):
        return client if client and client.source == OAuthClient.Source.REGISTERED else None
    if client is not None and client.fetched_until and client.fetched_until > timezone.now():
        return client
    if not _may_fetch.get():
        # The endpoints programs call without a person (token, revocation) never wait on
        # another server: the document was fetched at the consent page, and a stale copy
        # still names the client its grants were made for.
        if client is not None:
            return client
        raise InvalidClientError(
            description="Unknown client: its metadata document is read when a person signs "
            "in at /oauth/authorize."
        )
    if problem := _document_address_problem(client_id):
        raise InvalidClientError(description=f"The client_id {problem}.")
    _count_fetch()
    return _document_fetch(client_id)


# Who is asking, so that fetches of documents are limited per address, and whether this
# endpoint may fetch at all: set by the views.
_requester: ContextVar[str | None] = ContextVar("oauth_requester", default=None)
_may_fetch: ContextVar[bool] = ContextVar("oauth_may_fetch", default=True)


@contextmanager
def documents_fetched_for(ip: str | None, *, fetch: bool = True) -> Iterator[None]:
    """Count the metadata documents fetched inside the block against `ip`; with `fetch`
    false, none is fetched (a document client must be known already)."""
    token, allowed = _requester.set(ip), _may_fetch.set(fetch)
    try:
        yield
    finally:
        _requester.reset(token)
        _may_fetch.reset(allowed)


def _count_fetch() -> None:
    ip = _requester.get()
    limit = rate_limit_take(f"oauth-document:{ip}", settings.OAUTH_DOCUMENT_FETCHES_PER_MINUTE)
    if limit is not None and limit.refused:
        raise InvalidClientError(
            description="Too many client metadata documents fetched for this address; try "
            f"again in {limit.retry_after} second{pluralize(limit.retry_after)}."
        )


def client_name_clean(value: Any, fallback: str) -> str:
    """The app's name as people will read it (shown as unverified): printable, at most 100."""
    name = value if isinstance(value, str) else ""
    # Controls become spaces; invisible formatting (bidi overrides that would reverse how the
    # name reads) is dropped.
    name = "".join(
        " " if unicodedata.category(ch) in ("Cc", "Zl", "Zp") else ch
        for ch in name
        if unicodedata.category(ch) not in NAME_FORBIDDEN_CATEGORIES - {"Cc", "Zl", "Zp"}
    )
    return name.strip()[:100] or fallback


def _cache_lifetime(response: httpx.Response) -> timedelta:
    control = response.headers.get("Cache-Control", "").lower()
    if "no-store" in control or "no-cache" in control:
        return DOCUMENT_CACHE_MIN
    found = re.search(r"max-age=(\d+)", control)
    if not found:
        return DOCUMENT_CACHE_DEFAULT
    seconds = timedelta(seconds=int(found.group(1)))
    return max(DOCUMENT_CACHE_MIN, min(DOCUMENT_CACHE_MAX, seconds))


def _ssl() -> ssl.SSLContext | None:
    ca_file = settings.OAUTH_DOCUMENT_CA_FILE
    return ssl.create_default_context(cafile=ca_file) if ca_file else None


def _document_get(client_id: str) -> tuple[dict[str, Any], timedelta]:
    """GET the document: 5 KB, 5 seconds, no redirects, no private addresses (outside
    development). InvalidClientError says what went wrong."""
    client = guarded_client(
        timeout=DOCUMENT_TIMEOUT_SECONDS,
        user_agent="Gatehouse-OAuth/1",
        allow_private_setting="OAUTH_DOCUMENT_ALLOW_PRIVATE",
        ssl_context=_ssl(),
    )
    refused = "The app's client metadata document"
    try:
        with (
            client,
            time_limit(DOCUMENT_TIMEOUT_SECONDS),
            client.stream("GET", client_id, headers={"Accept": "application/json"}) as response,
        ):
            body = b""
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > DOCUMENT_MAX_BYTES:
                    raise InvalidClientError(description=f"{refused} is larger than 5 KB.")
    except (httpx.ConnectError, DestinationRefused) as exc:
        private = isinstance(exc, DestinationRefused) or isinstance(
            exc.__cause__, DestinationRefused
        )
        where = "is at a private address" if private else "could not be fetched"
        raise InvalidClientError(description=f"{refused} {where}.") from None
    except (httpx.TimeoutException, httpcore.TimeoutException):
        raise InvalidClientError(
            description=f"{refused} could not be fetched within 5 seconds."
        ) from None
    except (httpx.HTTPError, httpx.InvalidURL, httpcore.ConnectError, ValueError, UnicodeError):
        # Not the network's own words: they would tell which hosts and ports answer.
        raise InvalidClientError(description=f"{refused} could not be fetched.") from None
    if response.status_code != 200:
        raise InvalidClientError(
            description=f"{refused} answered HTTP {response.status_code} (redirects are not "
            "followed)."
        )
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise InvalidClientError(description=f"{refused} is not a JSON object.")
    return document, _cache_lifetime(response)


def _document_fetch(client_id: str) -> OAuthClient:
    document, lifetime = _document_get(client_id)
    refused = "The app's client metadata document"
    if document.get("client_id") != client_id:
        raise InvalidClientError(description=f"{refused} names another client_id.")
    if document.get("token_endpoint_auth_method", "none") != "none":
        raise InvalidClientError(
            description=f"{refused} asks for a client secret; only public "
            "clients (token_endpoint_auth_method none) are supported."
        )
    try:
        redirect_uris = redirect_uris_clean(document.get("redirect_uris"))
    except ValueError as error:
        raise InvalidClientError(description=f"{refused}: {error}") from None
    fields = {
        "source": OAuthClient.Source.DOCUMENT,
        "client_name": client_name_clean(document.get("client_name"), urlsplit(client_id).netloc),
        "client_uri": str(document.get("client_uri") or "")[:2000],
        "redirect_uris": redirect_uris,
        "grant_types": APP_GRANT_TYPES,
        "fetched_until": timezone.now() + lifetime,
    }
    client, _ = OAuthClient.objects.update_or_create(client_id=client_id, defaults=fields)
    return client
