"""What the authorization server hands out, as Gatehouse keys: a connected app's grant (one
MCP-tagged key an hour at a time, renewed by rotating refresh tokens) and the CLI's key of a
device login. Authlib runs the protocol; these functions decide and write, audited."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from apps.accounts.models import User
from apps.api_keys import tokens
from apps.api_keys.models import ApiKey
from apps.api_keys.policy import MCP_LIFETIME, key_holder_problem
from apps.api_keys.restrictions import Restrictions
from apps.api_keys.rolling import api_key_reissue
from apps.api_keys.services import api_key_create, api_key_revoke
from apps.audit.services import Actor, audit_record
from apps.common.validation import InvalidInput
from apps.workspaces.models import Membership, Workspace

from .audit_actions import OAUTH_AUTHORIZED, OAUTH_REFRESH_REUSED, OAUTH_REFRESHED, OAUTH_REVOKED
from .models import AuthorizationCode, OAuthClient, OAuthGrant, RefreshToken

CODE_LIFETIME = timedelta(minutes=5)
REFRESH_LIFETIME = timedelta(days=90)
REFRESH_AUDIT_EVERY = timedelta(days=1)


@dataclass(frozen=True)
class IssuedTokens:
    access_token: str
    expires_in: int
    scopes: list[str]
    refresh_token: str | None = None
    replaced_hints: tuple[str, ...] = ()  # the CLI's earlier keys this login revoked


class GrantRefused(Exception):
    """The token endpoint must refuse: `error` is the RFC 6749 §5.2 code."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


@dataclass(frozen=True)
class Approval:
    """What a person approved on the consent page."""

    client: OAuthClient
    user: User
    workspace: Workspace
    kind: str
    scopes: list[str]
    restrictions: Restrictions
    redirect_uri: str
    resource: str
    code_challenge: str
    code_challenge_method: str


def authorization_code_save(approval: Approval, code: str) -> None:
    """Keep an approval under its code (hashed) for the app to exchange within minutes."""
    now = timezone.now()
    AuthorizationCode.objects.create(
        code_hash=tokens.hash_secret(code),
        client=approval.client,
        user=approval.user,
        workspace=approval.workspace,
        kind=approval.kind,
        scopes=approval.scopes,
        restrictions=approval.restrictions.as_json(),
        redirect_uri=approval.redirect_uri,
        resource=approval.resource,
        code_challenge=approval.code_challenge,
        code_challenge_method=approval.code_challenge_method,
        created_at=now,
        expires_at=now + CODE_LIFETIME,
    )


def authorization_code_find(code: str, client: OAuthClient) -> AuthorizationCode | None:
    """The unexpired code, used or not (a used one presented again ends its grant)."""
    return (
        AuthorizationCode.objects.select_related("user", "workspace", "client")
        .filter(code_hash=tokens.hash_secret(code), client=client, expires_at__gt=timezone.now())
        .first()
    )


def _refresh_token_new(grant: OAuthGrant, now: datetime) -> str:
    secret = tokens.generate_refresh_token()
    RefreshToken.objects.create(
        grant=grant,
        token_hash=tokens.hash_secret(secret),
        created_at=now,
        expires_at=now + REFRESH_LIFETIME,
    )
    return secret


def _code_claim(code: AuthorizationCode, *, ip: str | None, now: datetime) -> None:
    """Mark the code used, once; a second presentation ends the grant it gave (RFC 6749
    §4.1.2: someone else holds a copy)."""
    if AuthorizationCode.objects.filter(pk=code.pk, used_at__isnull=True).update(used_at=now):
        return
    # Marked first, read after: if the first exchange has not written its grant yet, it sees
    # this mark once it has (end of `grant_create`), so one of the two always ends the grant.
    AuthorizationCode.objects.filter(pk=code.pk).update(reused_at=now)
    _grant_of_code_end(code, ip=ip)
    raise GrantRefused("invalid_grant", "This authorization code was already used.")


def _grant_of_code_end(code: AuthorizationCode, *, ip: str | None) -> None:
    first = AuthorizationCode.objects.filter(pk=code.pk).values_list("grant", flat=True).first()
    grant = OAuthGrant.objects.select_related("client", "user").filter(pk=first or 0).first()
    if grant is not None:
        grant_revoke(grant, actor=Actor.of_user(code.user, ip))


def grant_create(code: AuthorizationCode, *, ip: str | None) -> IssuedTokens:
    """Exchange an authorization code (once) for a new grant: its MCP key and its first
    refresh token. Audited `oauth.authorized`."""
    now = timezone.now()
    actor = Actor.of_user(code.user, ip)
    _code_claim(code, ip=ip, now=now)
    with transaction.atomic():
        if problem := key_holder_problem(code.user, code.workspace, code.kind):
            raise GrantRefused("invalid_grant", problem)
        try:
            created = api_key_create(
                workspace=code.workspace,
                user=code.user,
                name=code.client.client_name[:100],
                scopes=code.scopes,
                expires_at=None,
                kind=code.kind,
                tag=ApiKey.Tag.MCP,
                actor=actor,
                description=f"Connected app, signed in by OAuth; redirects to {code.client.host}.",
                restrictions=Restrictions.from_json(code.restrictions),
            )
        except InvalidInput as error:  # a policy changed since the approval
            raise GrantRefused("invalid_grant", error.message) from None
        grant = OAuthGrant.objects.create(
            client=code.client,
            client_name=code.client.client_name,
            user=code.user,
            workspace=code.workspace,
            key=created.key,
            created_at=now,
        )
        AuthorizationCode.objects.filter(pk=code.pk).update(grant=grant)
        refresh = _refresh_token_new(grant, now)
        audit_record(
            workspace=code.workspace,
            action=OAUTH_AUTHORIZED,
            actor=actor,
            key=created.key,
            subject=f"{grant.client_name} ({created.key.hint})",
            data={"client": code.client.client_id, "scopes": code.scopes},
        )
    if AuthorizationCode.objects.filter(pk=code.pk, reused_at__isnull=False).exists():
        _grant_of_code_end(code, ip=ip)  # presented again while this exchange ran
        raise GrantRefused("invalid_grant", "This authorization code was presented twice.")
    return IssuedTokens(created.secret, MCP_SECONDS, code.scopes, refresh)


MCP_SECONDS = int(MCP_LIFETIME.total_seconds())


def refresh_token_find(secret: str) -> RefreshToken | None:
    """The refresh token a secret names, used or not (a used one is answered by
    `grant_revoke_reused`)."""
    return (
        RefreshToken.objects.select_related("grant__key", "grant__client", "grant__user")
        .filter(token_hash=tokens.hash_secret(secret))
        .first()
    )


def grant_refresh(token: RefreshToken, *, ip: str | None) -> IssuedTokens:
    """Use a refresh token once: the grant's key gets a new secret and a new hour, and the
    app a new refresh token. Two concurrent uses of one token: the second finds it used and
    revokes the grant, as any reuse does."""
    grant, now = token.grant, timezone.now()
    # A suspended holder's app is refused and its token kept, unspent: the grant works again
    # if the identity provider restores them (docs/product.md §16).
    if Membership.objects.filter(
        workspace_id=grant.workspace_id, user_id=grant.user_id, suspended_at__isnull=False
    ).exists():
        raise GrantRefused(
            "invalid_grant",
            f"{grant.workspace.name}'s identity provider has suspended this account there.",
        )
    with transaction.atomic():
        used = RefreshToken.objects.filter(pk=token.pk, used_at__isnull=True).update(used_at=now)
    if not used:
        grant_revoke_reused(token, ip=ip)
        raise GrantRefused("invalid_grant", "This refresh token was already used.")
    if grant.revoked_at is not None or now >= token.expires_at:
        raise GrantRefused("invalid_grant", "This refresh token has expired or was revoked.")
    if problem := key_holder_problem(grant.user, grant.workspace, grant.key.kind):
        grant_revoke(grant, actor=Actor.of_operator("oauth"))
        raise GrantRefused("invalid_grant", problem)
    try:
        with transaction.atomic():
            reissued = api_key_reissue(key=grant.key)
            refresh = _refresh_token_new(grant, now)
            _grant_refreshed(grant, reissued.key, ip=ip, now=now)
    except InvalidInput:  # the key was revoked on its own: the connection has ended with it
        OAuthGrant.objects.filter(pk=grant.pk, revoked_at__isnull=True).update(revoked_at=now)
        raise GrantRefused("invalid_grant", "The connected app's key was revoked.") from None
    key = reissued.key
    return IssuedTokens(reissued.secret, MCP_SECONDS, list(key.scopes), refresh)


def _grant_refreshed(grant: OAuthGrant, key: ApiKey, *, ip: str | None, now: datetime) -> None:
    """Stamp the refresh; audit `oauth.refreshed` at most once a day per grant."""
    audit_due = grant.refresh_audited_at is None or (
        now - grant.refresh_audited_at >= REFRESH_AUDIT_EVERY
    )
    OAuthGrant.objects.filter(pk=grant.pk).update(
        refreshed_at=now, **({"refresh_audited_at": now} if audit_due else {})
    )
    if audit_due:
        audit_record(
            workspace=grant.workspace,
            action=OAUTH_REFRESHED,
            actor=Actor.of_key(key, ip),
            key=key,
            subject=f"{grant.client_name} ({key.hint})",
        )


def grant_revoke(grant: OAuthGrant, *, actor: Actor, action: str = OAUTH_REVOKED) -> bool:
    """End a grant: its key is revoked and its refresh tokens stop. False if already ended."""
    now = timezone.now()
    with transaction.atomic():
        if not OAuthGrant.objects.filter(pk=grant.pk, revoked_at__isnull=True).update(
            revoked_at=now
        ):
            return False
        key = ApiKey.objects.select_related("workspace", "user").get(pk=grant.key_id)
        api_key_revoke(key=key, actor=actor)
        audit_record(
            workspace=key.workspace,
            action=action,
            actor=actor,
            key=key,
            subject=f"{grant.client_name} ({key.hint})",
            data={"client": grant.client.client_id},
        )
    return True


def grant_revoke_reused(token: RefreshToken, *, ip: str | None) -> None:
    """A used refresh token came back: someone holds a copy. The grant ends."""
    grant = token.grant
    grant_revoke(grant, actor=Actor.of_user(grant.user, ip), action=OAUTH_REFRESH_REUSED)
