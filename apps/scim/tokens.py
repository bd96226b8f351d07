"""SCIM tokens (docs/product.md §16): made and revoked by owners, shown once, kept as the keyed
hash of their secret, each a way into /scim/v2/ of one workspace and nowhere else."""

from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from apps.api_keys import tokens as secrets
from apps.audit.services import Actor, audit_record
from apps.common.validation import InvalidInput, clean_text
from apps.workspaces.models import Workspace

from .audit_actions import SCIM_TOKEN_CREATED, SCIM_TOKEN_REVOKED, SCIM_TOKEN_ROLLED
from .models import ScimToken

# A token's last use is written at most this often: a provider's sync is many requests.
LAST_USED_EVERY = timedelta(minutes=1)


@dataclass(frozen=True)
class NewScimToken:
    token: ScimToken
    secret: str  # shown once, never stored


def scim_tokens_of(workspace: Workspace) -> QuerySet[ScimToken]:
    """The workspace's working tokens, newest first."""
    return ScimToken.objects.filter(workspace=workspace, revoked_at__isnull=True)


def scim_token_in(workspace: Workspace, token_id: object) -> ScimToken | None:
    """The working token `token_id` of `workspace`, or None."""
    try:
        return scim_tokens_of(workspace).filter(pk=int(str(token_id))).first()
    except ValueError:
        return None


def scim_token_create(*, workspace: Workspace, name: object, actor: Actor) -> NewScimToken:
    """Make a token named `name` ("Okta"); its secret is in the answer only."""
    name = clean_text(name, "name", max_length=100)
    secret = secrets.generate_scim_token()
    with transaction.atomic():
        token = ScimToken.objects.create(
            workspace=workspace,
            name=name,
            secret_hash=secrets.hash_secret(secret),
            hint=secrets.hint_for(secret),
            created_by=actor.user,
        )
        audit_record(
            workspace=workspace,
            action=SCIM_TOKEN_CREATED,
            actor=actor,
            subject=f"{token.name} ({token.hint})",
        )
    return NewScimToken(token, secret)


def scim_token_roll(*, token: ScimToken, actor: Actor) -> NewScimToken:
    """Give a token a new secret, shown once; the old one stops at once (paste the new one in
    the provider, which retries what it could not send meanwhile)."""
    secret = secrets.generate_scim_token()
    with transaction.atomic():
        rolled = ScimToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
            secret_hash=secrets.hash_secret(secret), hint=secrets.hint_for(secret)
        )
        if not rolled:
            raise InvalidInput("token", "This SCIM token was revoked: make a new one.")
        token.refresh_from_db(fields=["secret_hash", "hint"])
        audit_record(
            workspace=token.workspace,
            action=SCIM_TOKEN_ROLLED,
            actor=actor,
            subject=f"{token.name} ({token.hint})",
        )
    return NewScimToken(token, secret)


def scim_token_revoke(*, token: ScimToken, actor: Actor) -> ScimToken:
    """Revoke a token for good: the provider's next request is refused. Twice changes
    nothing."""
    now = timezone.now()
    with transaction.atomic():
        revoked = ScimToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
            revoked_at=now, revoked_by=actor.user
        )
        token.refresh_from_db(fields=["revoked_at", "revoked_by"])
        if revoked:
            audit_record(
                workspace=token.workspace,
                action=SCIM_TOKEN_REVOKED,
                actor=actor,
                subject=f"{token.name} ({token.hint})",
            )
    return token


def scim_token_authenticate(raw: str) -> ScimToken | None:
    """The working token a presented secret is, with its workspace; None otherwise. Its last
    use is stamped at most once a minute."""
    if not secrets.is_scim_token(raw):
        return None
    token = (
        ScimToken.objects.select_related("workspace")
        .filter(secret_hash=secrets.hash_secret(raw), revoked_at__isnull=True)
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_EVERY:
        stale = Q(last_used_at__isnull=True) | Q(last_used_at__lte=now - LAST_USED_EVERY)
        ScimToken.objects.filter(stale, pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
