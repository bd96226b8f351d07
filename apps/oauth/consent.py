"""GET/POST /oauth/authorize: the consent page where a person connects an app (RFC 6749 §4.1).

Authlib checks the request (client, exact redirect, PKCE S256, resource) and words every
error: one whose redirect is verified goes back to the app (§4.1.2.1), any other is shown
here. The person picks the workspace, narrows the scopes and may restrict the key."""

from typing import Any
from urllib.parse import urlsplit

from authlib.common.urls import add_params_to_uri
from authlib.oauth2.rfc6749.errors import InvalidRequestError, InvalidScopeError, OAuth2Error
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_http_methods

from apps.accounts.models import SignedInRequest
from apps.accounts.sudo import recent_authentication_required
from apps.api.scopes import ALL_SCOPES, MEMBER_SCOPES
from apps.api_keys.choosable import check_chosen_exist
from apps.api_keys.models import ApiKey
from apps.api_keys.policy import (
    MCP_LIFETIME,
    approval_note,
    key_policy_problem,
    scopes_without_approval,
)
from apps.api_keys.restrictions import Restrictions
from apps.common.http import client_ip, has_nul
from apps.common.middleware import policy_with_form_action
from apps.common.validation import InvalidInput
from apps.key_pages.forms import asked_scope_rows
from apps.key_pages.restriction_forms import RestrictionInputs
from apps.workspaces.gates import workspace_gate_refusal
from apps.workspaces.holders import two_factor_missing
from apps.workspaces.models import Membership
from apps.workspaces.selectors import STAFF_ROLES

from .clients import documents_fetched_for
from .issuing import Approval
from .metadata import public_origin
from .redirects import is_private_use_uri
from .server import SERVER


def _memberships(request: SignedInRequest) -> tuple[list[Membership], list[Membership]]:
    """The workspaces this person may connect an app to, and those closed to them until they
    set up a second factor (the workspace requires one)."""
    memberships = list(
        Membership.objects.select_related("workspace")
        .filter(user=request.user)
        .order_by("created_at", "id")
    )
    return (
        [m for m in memberships if not two_factor_missing(request.user, m.workspace)],
        [m for m in memberships if two_factor_missing(request.user, m.workspace)],
    )


def _kind(membership: Membership) -> str:
    return ApiKey.Kind.WORKSPACE if membership.role in STAFF_ROLES else ApiKey.Kind.MEMBER


def _grantable(requested: str, kind: str) -> list[str]:
    """What the app asked for, within what this person's key may hold; all of that when it
    asked for nothing. Empty when it asked only for what this key cannot hold."""
    allowed = ALL_SCOPES if kind == ApiKey.Kind.WORKSPACE else MEMBER_SCOPES
    if not requested.split():
        return list(allowed)
    return [s for s in requested.split() if s in allowed]


def _consent_page(
    request: SignedInRequest, grant: Any, context: dict[str, Any], status: int = 200
) -> HttpResponse:
    """The page, with a policy that lets its form end at the app's redirect address."""
    response = render(request, "oauth/authorize.html", context, status=status)
    parts = urlsplit(grant.redirect_uri)
    if is_private_use_uri(grant.redirect_uri) or not parts.netloc:
        # A native app's scheme as a whole: Chromium reads `cursor://host` as a source with
        # no host it could match, and would block the answer to the app.
        target = f"{parts.scheme}:"
    else:
        target = f"{parts.scheme}://{parts.netloc}"
    response["Content-Security-Policy"] = policy_with_form_action(target)
    return response


def _error_page(request: SignedInRequest, error: OAuth2Error) -> HttpResponse:
    """An error that cannot go back to the app (unknown client, unverified redirect)."""
    context = {"error": error.error, "description": error.get_error_description()}
    return render(request, "oauth/authorize_error.html", context, status=400)


def _to_app(request: SignedInRequest, response: HttpResponse) -> HttpResponse:
    """RFC 9207: every answer sent back to the app, errors included, names this server as
    `iss`, so an app that talks to several servers can tell which one answered."""
    if response.has_header("Location"):
        response["Location"] = add_params_to_uri(
            response["Location"], [("iss", public_origin(request))]
        )
    return response


def _chosen_membership(
    request: SignedInRequest, memberships: list[Membership]
) -> Membership | None:
    wanted = request.POST.get("workspace") or request.GET.get("workspace")
    by_id = {str(m.workspace_id): m for m in memberships}
    return by_id.get(wanted or "") or (memberships[0] if memberships else None)


@csrf_exempt  # checked below, once the method is known: another method is 405, not 403
@never_cache
@require_http_methods(["GET", "POST"])
@csrf_protect
@login_required
@recent_authentication_required
def authorize(request: SignedInRequest) -> HttpResponse:
    """The consent page; approving sends the app its code, denying `access_denied`."""
    if has_nul(request.GET) or has_nul(request.POST):
        return _error_page(request, InvalidRequestError("A parameter holds a NUL character."))
    try:
        with documents_fetched_for(client_ip(request)):
            grant = SERVER.get_consent_grant(request, end_user=request.user)
    except OAuth2Error as error:
        if error.redirect_uri:
            return _to_app(request, SERVER.handle_error_response(None, error))
        return _error_page(request, error)
    except ValueError:  # Authlib refuses to word an error quoting a malformed redirect_uri
        return _error_page(request, InvalidRequestError("The redirect_uri is malformed."))
    if request.method == "POST" and request.POST.get("decision") == "deny":
        return _to_app(
            request, SERVER.create_authorization_response(request, grant_user=None, grant=grant)
        )
    memberships, closed = _memberships(request)
    membership = _chosen_membership(request, memberships)
    context: dict[str, Any] = {
        "client": grant.request.client,
        "memberships": memberships,
        "closed": closed,
        "membership": membership,
        "oauth_params": [(k, v) for k, v in request.GET.items() if k != "workspace"],
        "lifetime_hours": int(MCP_LIFETIME.total_seconds() // 3600),
        "redirect_host": urlsplit(grant.redirect_uri).netloc or grant.redirect_uri,
        # A native app's own scheme: the operating system opens whichever app claimed it.
        "redirect_app": urlsplit(grant.redirect_uri).scheme
        if is_private_use_uri(grant.redirect_uri)
        else "",
    }
    if membership is None:
        return _consent_page(request, grant, context, status=403)
    # A workspace that requires single sign-on connects apps only from a session signed in
    # through its provider (docs/product.md §16): there first, then back to this page.
    if (sso_first := workspace_gate_refusal(request, membership)) is not None:
        return sso_first
    kind = _kind(membership)
    asked = _grantable(grant.request.payload.scope or "", kind)
    if not asked:
        refused = InvalidScopeError(
            f"A {kind} key cannot hold any of the scopes asked for.",
            redirect_uri=grant.redirect_uri,
            state=grant.request.payload.state,
        )
        return _to_app(request, SERVER.handle_error_response(None, refused))
    # A connected app's key never waits for an owner: offer only what the policy leaves free.
    policy = membership.workspace.key_approval
    grantable = scopes_without_approval(policy, membership.role, asked)
    if len(grantable) < len(asked):
        context["approval_note"] = approval_note(policy, membership.role)
    if not grantable:
        context["blocked"] = True
        return _consent_page(request, grant, context, status=403)
    posted = request.method == "POST"
    chosen = request.POST.getlist("scopes") if posted else grantable
    inputs = RestrictionInputs(
        request.POST if posted else None,
        workspace_id=membership.workspace_id,
        member_id=request.user.pk if kind == ApiKey.Kind.MEMBER else None,
    )
    context.update(kind=kind, scope_rows=asked_scope_rows(grantable, chosen), inputs=inputs)
    if not posted or request.POST.get("decision") != "approve":
        return _consent_page(request, grant, context)
    return _approve(request, grant, context, grantable, chosen)


def _approve(
    request: SignedInRequest,
    grant: Any,
    context: dict[str, Any],
    grantable: list[str],
    chosen: list[str],
) -> HttpResponse:
    """Check what was ticked on the page, then send the app its code."""
    membership, kind, inputs = context["membership"], context["kind"], context["inputs"]
    problem = _approval_problem(membership, grantable, chosen)
    if request.POST.get("workspace") != str(membership.workspace_id):
        problem = "Choose one of your workspaces."  # never another than the one shown
    restrictions = inputs.clean()
    if restrictions is not None and not problem:
        problem = _restrictions_problem(restrictions, membership, kind)
    if problem or restrictions is None:
        context["error"] = problem or "Check the restrictions."
        return _consent_page(request, grant, context, status=400)
    data = grant.request.payload.data
    grant.request.approval = Approval(
        client=grant.request.client,
        user=request.user,
        workspace=membership.workspace,
        kind=kind,
        scopes=sorted(set(chosen)),
        restrictions=restrictions,
        redirect_uri=grant.redirect_uri,
        resource=data["resource"],
        code_challenge=data["code_challenge"],
        code_challenge_method=data["code_challenge_method"],
    )
    response = SERVER.create_authorization_response(request, grant_user=request.user, grant=grant)
    return _to_app(request, response)


def _restrictions_problem(restrictions: Restrictions, membership: Membership, kind: str) -> str:
    """The objects chosen must be ones this key could reach (this workspace, and for a
    member key the person's own communities)."""
    member_id = membership.user_id if kind == ApiKey.Kind.MEMBER else None
    try:
        check_chosen_exist(restrictions, workspace_id=membership.workspace_id, member_id=member_id)
    except InvalidInput as error:
        return error.message
    return ""


def _approval_problem(membership: Membership, grantable: list[str], chosen: list[str]) -> str:
    if not chosen:
        return "Choose at least one permission."
    if widened := [s for s in chosen if s not in grantable]:
        return f"The app did not ask for {widened[0]}; it cannot be added."
    now = timezone.now()
    problem = key_policy_problem(membership.workspace, now + MCP_LIFETIME, now=now)
    return problem or ""
