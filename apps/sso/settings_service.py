"""Owners set a workspace's OpenID Connect provider, test it, choose the mode, or remove it
(docs/product.md §16). Each change audited; `required` only after a successful test sign-in
since the provider last changed."""

from urllib.parse import urlsplit

import httpcore
import httpx
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.accounts.models import User
from apps.audit.services import Actor, audit_record
from apps.common.validation import InvalidInput, clean_text
from apps.webhooks.destinations import guarded_client, time_limit
from apps.webhooks.secrets import seal
from apps.workspaces.models import Membership, Workspace

from .audit_actions import SSO_CONFIGURED, SSO_MODE_CHANGED, SSO_REMOVED, SSO_TESTED
from .models import SingleSignOn
from .saml import idp_entity_id

DISCOVERY_TIMEOUT_SECONDS = 5


def clean_issuer(value: object) -> str:
    """An issuer URL whose discovery document answers and names it as its issuer."""
    issuer = clean_text(value, "issuer", max_length=300).rstrip("/")
    parts = urlsplit(issuer)
    local = parts.hostname in ("127.0.0.1", "localhost", "::1")
    if parts.scheme != "https" and not (
        parts.scheme == "http" and local and settings.SSO_ALLOW_HTTP_ISSUER
    ):
        raise InvalidInput("issuer", "The issuer must be an https:// address.")
    # Fetched as a webhook is: public addresses only (a provider on this machine only where
    # SSO_ALLOW_HTTP_ISSUER is on), no redirects, the whole exchange within the limit.
    try:
        with (
            time_limit(DISCOVERY_TIMEOUT_SECONDS),
            guarded_client(
                timeout=DISCOVERY_TIMEOUT_SECONDS,
                user_agent="Gatehouse-SSO/1",
                allow_private_setting="SSO_ALLOW_HTTP_ISSUER",
            ) as client,
        ):
            answer = client.get(issuer + "/.well-known/openid-configuration")
            document = answer.json() if answer.status_code == 200 else None
    except (httpx.HTTPError, httpcore.ConnectError, ValueError):
        document = None
    if not isinstance(document, dict):
        raise InvalidInput(
            "issuer", f"{issuer}/.well-known/openid-configuration did not answer with a document."
        )
    if str(document.get("issuer", "")).rstrip("/") != issuer:
        raise InvalidInput(
            "issuer", f"The provider calls itself {document.get('issuer')!r}, not {issuer!r}."
        )
    return issuer


def sso_configure(
    *, workspace: Workspace, issuer: object, client_id: object, client_secret: object, actor: Actor
) -> SingleSignOn:
    """Set (or replace) the provider. A new provider must be tested again before `required`:
    a workspace that required it falls back to `allowed`, saying so in the audit log."""
    issuer = clean_issuer(issuer)
    client_id = clean_text(client_id, "client_id", max_length=200)
    secret = clean_text(client_secret, "client_secret", max_length=500)
    with transaction.atomic():
        current = SingleSignOn.objects.select_for_update().filter(workspace=workspace).first()
        before = current.mode if current else None
        provider_before = current.provider if current else ""
        sso = current or SingleSignOn(workspace=workspace)
        sso.protocol, sso.saml_metadata, sso.saml_entity_id = SingleSignOn.Protocol.OIDC, "", ""
        sso.issuer, sso.client_id, sso.client_secret_sealed = issuer, client_id, seal(secret)
        sso.tested_at = sso.tested_by = None
        if sso.mode == SingleSignOn.Mode.REQUIRED:
            sso.mode = SingleSignOn.Mode.ALLOWED
        sso.updated_at = timezone.now()
        sso.save()
        _forget_links(workspace, changed=provider_before != sso.provider)
        audit_record(
            workspace=workspace,
            action=SSO_CONFIGURED,
            actor=actor,
            subject=issuer,
            data={"issuer": issuer, "clientId": client_id, "modeBefore": before, "mode": sso.mode},
        )
    return sso


MAX_METADATA_LENGTH = 200_000


def sso_configure_saml(*, workspace: Workspace, metadata: object, actor: Actor) -> SingleSignOn:
    """Set (or replace) a SAML 2.0 identity provider by its metadata XML, read by pysaml2. As
    with OpenID Connect, a new provider must be tested again before `required`."""
    if not isinstance(metadata, str) or not metadata.strip():
        raise InvalidInput("metadata", "Paste the identity provider's SAML metadata (XML).")
    if len(metadata) > MAX_METADATA_LENGTH:
        raise InvalidInput("metadata", "The metadata is over 200,000 characters.")
    try:
        entity_id = idp_entity_id(metadata)
    except ValueError as error:
        raise InvalidInput("metadata", str(error)) from None
    with transaction.atomic():
        current = SingleSignOn.objects.select_for_update().filter(workspace=workspace).first()
        before = current.mode if current else None
        provider_before = current.provider if current else ""
        sso = current or SingleSignOn(workspace=workspace)
        sso.protocol = SingleSignOn.Protocol.SAML
        sso.saml_metadata, sso.saml_entity_id = metadata, entity_id[:300]
        sso.issuer = sso.client_id = sso.client_secret_sealed = ""
        sso.tested_at = sso.tested_by = None
        if sso.mode == SingleSignOn.Mode.REQUIRED:
            sso.mode = SingleSignOn.Mode.ALLOWED
        sso.updated_at = timezone.now()
        sso.save()
        _forget_links(workspace, changed=provider_before != sso.provider)
        audit_record(
            workspace=workspace,
            action=SSO_CONFIGURED,
            actor=actor,
            subject=entity_id,
            data={
                "protocol": "saml",
                "entityId": entity_id,
                "modeBefore": before,
                "mode": sso.mode,
            },
        )
    return sso


def _forget_links(workspace: Workspace, *, changed: bool) -> None:
    """Another provider's subjects mean nothing here: the team links again, by verified address,
    at their next sign-in through the new one."""
    if changed:
        Membership.objects.filter(workspace=workspace).exclude(sso_subject="").update(
            sso_subject=""
        )


def sso_set_mode(*, sso: SingleSignOn, mode: str, actor: Actor) -> SingleSignOn:
    if mode not in SingleSignOn.Mode.values:
        raise InvalidInput("mode", "The mode must be off, allowed or required.")
    if mode == SingleSignOn.Mode.REQUIRED and sso.tested_at is None:
        raise InvalidInput(
            "mode",
            "Sign in once through the provider with Test sign-in first: required closes the "
            "workspace to every other sign-in.",
        )
    with transaction.atomic():
        before = sso.mode
        SingleSignOn.objects.filter(pk=sso.pk).update(mode=mode, updated_at=timezone.now())
        sso.mode = mode
        if before != mode:
            audit_record(
                workspace=sso.workspace,
                action=SSO_MODE_CHANGED,
                actor=actor,
                subject=mode,
                data={"before": before, "after": mode},
            )
    return sso


def sso_tested(*, sso: SingleSignOn, owner: User, actor: Actor) -> None:
    """An owner signed in through the provider as themself: `required` may now be chosen."""
    with transaction.atomic():
        now = timezone.now()
        SingleSignOn.objects.filter(pk=sso.pk).update(tested_at=now, tested_by=owner)
        sso.tested_at, sso.tested_by = now, owner
        audit_record(workspace=sso.workspace, action=SSO_TESTED, actor=actor, subject=sso.issuer)


def sso_remove(*, sso: SingleSignOn, actor: Actor) -> None:
    with transaction.atomic():
        audit_record(workspace=sso.workspace, action=SSO_REMOVED, actor=actor, subject=sso.issuer)
        sso.delete()
