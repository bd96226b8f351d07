"""Signing in through a workspace's OpenID Connect provider (docs/product.md §16), on Authlib:
discovery, the authorization code with PKCE (S256) and a nonce, and the ID token checked
against the issuer's JWKS (signature, issuer, audience, expiry, nonce). Nothing here parses a
JWT by hand.

A person is matched by the provider's stable subject once linked; the first sign-in links only
to someone already on this workspace's team whose verified address the token names.
"""

from dataclasses import dataclass
from typing import Any

from authlib.integrations.base_client import OAuthError
from authlib.integrations.django_client import DjangoOAuth2App
from authlib.integrations.django_client.integration import DjangoIntegration
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponseRedirect
from joserfc.errors import JoseError

from apps.webhooks.secrets import unseal
from apps.workspaces.models import Membership
from apps.workspaces.selectors import STAFF_ROLES

from .models import SingleSignOn

SCOPES = "openid email profile"
# How far the provider's clock may be from ours when the ID token's times are checked.
CLOCK_LEEWAY_SECONDS = 30
_PENDING = "sso_pending"  # the session's note of the sign-in under way: workspace, test


class SignInRefused(Exception):
    """The provider's answer does not sign anyone in here; `message` says why, for the page."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _client(sso: SingleSignOn) -> DjangoOAuth2App:
    return DjangoOAuth2App(
        DjangoIntegration(f"sso-{sso.workspace_id}"),
        f"sso-{sso.workspace_id}",
        client_id=sso.client_id,
        client_secret=unseal(sso.client_secret_sealed),
        server_metadata_url=sso.issuer.rstrip("/") + "/.well-known/openid-configuration",
        # Every request to the provider (discovery, keys, token) gives up after 10 seconds.
        client_kwargs={"scope": SCOPES, "code_challenge_method": "S256", "default_timeout": 10},
    )


def sign_in_start(
    request: HttpRequest, sso: SingleSignOn, redirect_uri: str, *, test: bool = False
) -> HttpResponseRedirect:
    """Send the browser to the provider; the state, PKCE verifier and nonce wait in the
    session (Authlib keeps them under the state)."""
    request.session[_PENDING] = {"workspace": str(sso.workspace_id), "test": test}
    try:
        return _client(sso).authorize_redirect(request, redirect_uri)
    except (OAuthError, OSError, ValueError) as error:
        raise SignInRefused(f"The identity provider could not be reached: {error}") from None


@dataclass(frozen=True)
class ProviderAnswer:
    workspace_id: str
    test: bool
    subject: str
    email: str
    email_verified: bool


def sign_in_finish(request: HttpRequest) -> ProviderAnswer:
    """The provider's answer, checked: the code exchanged with its verifier and the ID token
    verified. SignInRefused for anything else (an error from the provider, a state or nonce
    that does not match, an expired or badly signed token)."""
    pending = request.session.pop(_PENDING, None)
    if not pending:
        raise SignInRefused("This sign-in was not started here, or it was already used.")
    if error := request.GET.get("error"):
        described = request.GET.get("error_description", "")
        raise SignInRefused(
            f"The identity provider answered {error}{': ' + described if described else ''}."
        )
    sso = SingleSignOn.objects.filter(workspace_id=pending["workspace"]).first()
    if sso is None:
        raise SignInRefused("This workspace no longer signs in through an identity provider.")
    client = _client(sso)
    try:
        token = client.authorize_access_token(
            request, claims_options=None, leeway=CLOCK_LEEWAY_SECONDS
        )
    except (OAuthError, JoseError, OSError, ValueError, KeyError) as error:
        raise SignInRefused(f"The identity provider's answer was refused: {error}") from None
    claims: dict[str, Any] = dict(token.get("userinfo") or {})
    if not claims.get("sub"):
        raise SignInRefused("The identity provider sent no ID token.")
    return ProviderAnswer(
        workspace_id=pending["workspace"],
        test=bool(pending.get("test")),
        subject=str(claims["sub"]),
        email=str(claims.get("email") or "").lower(),
        email_verified=claims.get("email_verified") is True,
    )


def membership_for(answer: ProviderAnswer) -> Membership:
    """The teammate the answer signs in: the one linked to its subject, or, the first time, the
    teammate whose verified address it names (then linked). Never anyone else."""
    team = Membership.objects.select_related("user", "workspace").filter(
        workspace_id=answer.workspace_id, role__in=STAFF_ROLES, user__is_service_account=False
    )
    linked = team.filter(sso_subject=answer.subject).first()
    if linked is not None:
        return linked
    if not (answer.email and answer.email_verified):
        raise SignInRefused(
            "Your identity provider did not vouch for an e-mail address, so this account "
            "cannot be linked. Ask an owner of the workspace for an invitation."
        )
    candidate = team.filter(user__email__iexact=answer.email, sso_subject="").first()
    if candidate is None:
        raise SignInRefused(
            f"{answer.email} is not on this workspace's team. Ask one of its owners for an "
            "invitation; signing in through the identity provider never creates an account."
        )
    try:
        with transaction.atomic():
            Membership.objects.filter(pk=candidate.pk, sso_subject="").update(
                sso_subject=answer.subject
            )
    except IntegrityError:
        raise SignInRefused("This identity is already linked to another teammate.") from None
    candidate.sso_subject = answer.subject
    return candidate
