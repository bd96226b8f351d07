"""Signing in through a workspace's SAML 2.0 identity provider (docs/product.md §16), on pysaml2
(which verifies the XML signatures with xmlsec1): this module parses no XML and checks no
signature itself. It asks for a signed response and a signed assertion, for this workspace's
audience and ACS, within the time window, in answer to a request it sent (used once, so a
replayed response is refused), and refuses SHA-1 signatures pysaml2 would let through.

The provider POSTs its answer from its own site, which brings no session cookie (SameSite=Lax):
the answer is checked against the request kept server-side (SamlRequest), and the browser
goes on with a one-time ticket to `saml_finish`, where its session is back.
"""

import hashlib
import logging
import secrets
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.client import Saml2Client
from saml2.config import SPConfig
from saml2.metadata import entity_descriptor, metadata_tostring_fix
from saml2.saml import NAMEID_FORMAT_EMAILADDRESS

from .flow import ProviderAnswer, SignInRefused
from .models import SamlRequest, SingleSignOn

logger = logging.getLogger("apps.sso")
# pysaml2 logs every refusal at ERROR with a traceback; the refusal is ours to tell.
logging.getLogger("saml2").setLevel(logging.CRITICAL)

XMLSEC = "/usr/bin/xmlsec1"
CLOCK_SKEW_SECONDS = 60
ANSWER_WITHIN = timedelta(minutes=10)  # a request unanswered by then is refused
TICKET_WITHIN = timedelta(minutes=2)
WEAK_SIGNATURES = ("xmldsig#rsa-sha1", "xmldsig#dsa-sha1", "xmldsig#sha1")


def sp_entity_id(workspace_id: object) -> str:
    return settings.SITE_URL.rstrip("/") + reverse("sso:saml_metadata", args=[workspace_id])


def acs_url(workspace_id: object) -> str:
    return settings.SITE_URL.rstrip("/") + reverse("sso:saml_acs", args=[workspace_id])


def _config(workspace_id: object, idp_metadata: str | None) -> SPConfig:
    config = SPConfig()
    config.load(
        {
            "entityid": sp_entity_id(workspace_id),
            "xmlsec_binary": XMLSEC,
            "service": {
                "sp": {
                    "endpoints": {
                        "assertion_consumer_service": [(acs_url(workspace_id), BINDING_HTTP_POST)]
                    },
                    "allow_unsolicited": False,
                    "authn_requests_signed": False,
                    "want_response_signed": True,
                    "want_assertions_signed": True,
                    "want_assertions_or_response_signed": True,
                    "name_id_format": [NAMEID_FORMAT_EMAILADDRESS],
                }
            },
            "metadata": {"inline": [idp_metadata]} if idp_metadata else {},
            "accepted_time_diff": CLOCK_SKEW_SECONDS,
            "allow_unknown_attributes": True,
        }
    )
    return config


def sp_metadata(workspace_id: object) -> str:
    """What the identity provider needs of this workspace, as SAML metadata XML."""
    descriptor = entity_descriptor(_config(workspace_id, None))
    text = metadata_tostring_fix(descriptor, {"xs": "http://www.w3.org/2001/XMLSchema"}, None)
    return text.decode() if isinstance(text, bytes) else str(text)


def idp_entity_id(metadata: str) -> str:
    """The identity provider's entity id in its metadata; ValueError when it has none (or is
    not SAML metadata of one identity provider with a single sign-on service)."""
    try:
        config = _config(uuid.UUID(int=0), metadata)  # any workspace: only its reading counts
    except Exception as error:  # pysaml2 raises what its parsers raise
        raise ValueError(f"This is not SAML metadata pysaml2 can read: {error}") from None
    providers = list(config.metadata.identity_providers())
    if len(providers) != 1:
        raise ValueError("The metadata must describe exactly one identity provider.")
    return str(providers[0])


KEPT = timedelta(days=1)  # requests older than this are forgotten


def saml_start(sso: SingleSignOn, *, test: bool, browser: str) -> str:
    """The provider's sign-in address for a new AuthnRequest, kept to check the answer and
    bound to `browser` (a secret the starting session holds)."""
    client = Saml2Client(config=_config(sso.workspace_id, sso.saml_metadata))
    try:
        request_id, info = client.prepare_for_authenticate(
            entityid=sso.saml_entity_id, binding=BINDING_HTTP_REDIRECT
        )
    except Exception as error:
        raise SignInRefused(f"The identity provider's metadata cannot be used: {error}") from None
    SamlRequest.objects.filter(created_at__lt=timezone.now() - KEPT).delete()
    SamlRequest.objects.create(
        request_id=request_id, workspace_id=sso.workspace_id, test=test, browser_hash=_hash(browser)
    )
    return str(dict(info["headers"])["Location"])


def _hash(ticket: str) -> str:
    return hashlib.sha256(ticket.encode()).hexdigest()


def saml_answer(workspace_id: str, saml_response: str) -> str:
    """Check the provider's POSTed answer; a one-time ticket to finish with. SignInRefused for
    anything unsigned, weakly signed, for another audience or ACS, out of its time window, not
    in answer to a request of ours, or already used."""
    sso = SingleSignOn.objects.filter(
        workspace_id=workspace_id, protocol=SingleSignOn.Protocol.SAML
    ).first()
    if sso is None or not saml_response:
        raise SignInRefused("This workspace does not sign in through a SAML identity provider.")
    since = timezone.now() - ANSWER_WITHIN
    waiting = {
        r.request_id: "/"
        for r in SamlRequest.objects.filter(
            workspace_id=workspace_id, answered_at__isnull=True, created_at__gte=since
        )
    }
    client = Saml2Client(config=_config(workspace_id, sso.saml_metadata))
    try:
        response: Any = client.parse_authn_request_response(
            saml_response,
            BINDING_HTTP_POST,
            outstanding=waiting,
            conv_info={"entity_id": client.config.entityid},
        )
    except Exception as error:  # pysaml2's refusals share no base class
        logger.info("SAML answer refused for %s: %s", workspace_id, error)
        raise SignInRefused(f"The identity provider's answer was refused: {error}") from None
    if response is None or response.assertion is None or response.name_id is None:
        raise SignInRefused("The answer holds no assertion for this workspace.")
    if response.issuer() != sso.saml_entity_id:
        raise SignInRefused("The answer comes from another identity provider.")
    if any(weak in str(response.xmlstr) for weak in WEAK_SIGNATURES):
        raise SignInRefused("The answer is signed with SHA-1, which is not accepted.")
    ticket = secrets.token_urlsafe(32)
    identity = response.get_identity() or {}
    email = (identity.get("email") or identity.get("mail") or [""])[0]
    if not email and response.name_id.format == NAMEID_FORMAT_EMAILADDRESS:
        email = response.name_id.text
    with transaction.atomic():
        used = SamlRequest.objects.filter(
            request_id=response.in_response_to, answered_at__isnull=True
        ).update(
            answered_at=timezone.now(),
            subject=str(response.name_id.text)[:255],
            email=str(email).lower()[:254],
            ticket_hash=_hash(ticket),
        )
    if not used:
        raise SignInRefused("This answer was already used.")
    return ticket


def saml_finish(ticket: str, browser: str) -> ProviderAnswer:
    """The checked answer a ticket stands for, once, within two minutes of the answer, in the
    browser that started the sign-in."""
    since = timezone.now() - TICKET_WITHIN
    if not (ticket and browser):
        raise SignInRefused("This sign-in was not started in this browser: start again.")
    with transaction.atomic():
        request = (
            SamlRequest.objects.select_for_update()
            .filter(
                ticket_hash=_hash(ticket),
                browser_hash=_hash(browser),
                finished_at__isnull=True,
                answered_at__gte=since,
            )
            .first()
        )
        if request is None:
            raise SignInRefused("This sign-in has expired or was already used: start again.")
        request.finished_at = timezone.now()
        request.save(update_fields=["finished_at"])
    return ProviderAnswer(
        workspace_id=str(request.workspace_id),
        test=request.test,
        subject=request.subject,
        email=request.email,
        # The company's directory vouches for the addresses it asserts.
        email_verified=bool(request.email),
    )
