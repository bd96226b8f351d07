"""A workspace that requires single sign-on opens only to a session signed in through its
provider in the last SSO_SESSION_HOURS (docs/product.md §16). Owners with a second factor keep
their password as the way back in, should the provider fail."""

import time
from urllib.parse import urlencode

from allauth.mfa.utils import is_mfa_enabled
from django.conf import settings
from django.contrib.auth import logout
from django.http import HttpRequest, HttpResponseRedirect
from django.urls import reverse

from apps.workspaces.models import Membership

from .models import SingleSignOn

SIGNED_IN = "sso_signed_in"  # the session's {workspace id: when it signed in through SSO}
MADE_BY_SSO = "sso_made"  # the session began with a sign-in through a provider, no password


def note_sso_sign_in(request: HttpRequest, workspace_id: str) -> None:
    signed = dict(request.session.get(SIGNED_IN) or {})
    signed[str(workspace_id)] = time.time()
    request.session[SIGNED_IN] = signed


def signed_in_through_sso(request: HttpRequest, workspace_id: object) -> bool:
    """Whether this session signed in through the workspace's provider recently enough."""
    at = (request.session.get(SIGNED_IN) or {}).get(str(workspace_id))
    return at is not None and time.time() - at < settings.SSO_SESSION_HOURS * 3600


def break_glass(request: HttpRequest, membership: Membership) -> bool:
    """An owner signed in with password and second factor: the way back in."""
    return membership.role == Membership.Role.OWNER and is_mfa_enabled(request.user)


def sso_required_gate(request: HttpRequest, membership: Membership) -> HttpResponseRedirect | None:
    """The provider's sign-in again, for a workspace that requires it when this session has none
    recent enough, and for a session the provider made once SSO_SESSION_HOURS have passed."""
    made_by = request.session.get(MADE_BY_SSO)
    if made_by and made_by != str(membership.workspace_id):
        # A provider's session opens its own workspace only (docs/product.md §16).
        logout(request)
        return HttpResponseRedirect(reverse("account_login"))
    made_by_sso = bool(made_by)
    modes = [SingleSignOn.Mode.REQUIRED, *([SingleSignOn.Mode.ALLOWED] if made_by_sso else [])]
    mode = (
        SingleSignOn.objects.filter(workspace_id=membership.workspace_id, mode__in=modes)
        .values_list("mode", flat=True)
        .first()
    )
    if mode is None or signed_in_through_sso(request, membership.workspace_id):
        return None
    if mode == SingleSignOn.Mode.REQUIRED and not made_by_sso and break_glass(request, membership):
        return None
    start = reverse("sso:start", args=[membership.workspace_id])
    return HttpResponseRedirect(f"{start}?{urlencode({'next': request.get_full_path()})}")
