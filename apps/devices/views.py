"""The OAuth device endpoints the CLI calls, and the /device page where a person approves."""

from typing import Any

from allauth.mfa.utils import is_mfa_enabled
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts.models import SignedInRequest
from apps.accounts.sudo import recent_authentication_required
from apps.api.ratelimit import rate_limit_take
from apps.api.scopes import ACTIONS, GROUPS
from apps.api_keys.policy import CLI_LIFETIME
from apps.api_keys.services import api_key_revoke
from apps.api_keys.verification import api_key_find_by_secret
from apps.audit.services import Actor
from apps.common.http import client_ip
from apps.common.validation import InvalidInput
from apps.workspaces.models import Membership
from apps.workspaces.selectors import STAFF_ROLES

from .approval import (
    device_authorization_approve,
    device_authorization_deny,
    device_authorization_find,
)
from .services import (
    DEVICE_CODE_LIFETIME,
    DeviceGrantError,
    device_authorization_start,
    device_token_poll,
)

DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def _oauth_json(data: dict[str, Any], status: int = 200) -> JsonResponse:
    response = JsonResponse(data, status=status)
    response["Cache-Control"] = "no-store"
    response["Pragma"] = "no-cache"
    return response


def _oauth_error(error: DeviceGrantError) -> JsonResponse:
    body = {"error": error.code}
    if error.description:
        body["error_description"] = error.description
    return _oauth_json(body, status=400)


@csrf_exempt
@require_POST
def device_code(request: HttpRequest) -> JsonResponse:
    """POST /oauth/device/code (RFC 8628 §3.1-3.2), limited per client address."""
    ip = client_ip(request)
    limit = rate_limit_take(f"device-code:{ip}", settings.DEVICE_CODES_PER_MINUTE)
    if limit is not None and limit.refused:
        response = _oauth_json(
            {
                "error": "slow_down",
                "error_description": "Too many login requests from this address; "
                f"try again in {limit.retry_after} seconds.",
            },
            status=429,
        )
        response["Retry-After"] = str(limit.retry_after)
        return response
    try:
        started = device_authorization_start(
            client_id=request.POST.get("client_id", ""),
            scope=request.POST.get("scope", ""),
            installation_id=request.POST.get("installation_id", ""),
            device_name=request.POST.get("device_name", ""),
            ip=ip,
        )
    except DeviceGrantError as error:
        return _oauth_error(error)
    authorization = started.authorization
    verification_uri = request.build_absolute_uri(reverse("devices:approve"))
    return _oauth_json(
        {
            "device_code": started.device_code,
            "user_code": authorization.user_code_display,
            "verification_uri": verification_uri,
            "verification_uri_complete": (
                f"{verification_uri}?user_code={authorization.user_code_display}"
            ),
            "expires_in": int(DEVICE_CODE_LIFETIME.total_seconds()),
            "interval": authorization.interval,
        }
    )


@csrf_exempt
@require_POST
def token(request: HttpRequest) -> JsonResponse:
    """POST /oauth/token with the device-code grant (RFC 8628 §3.4-3.5)."""
    grant_type = request.POST.get("grant_type", "")
    if not grant_type:
        return _oauth_error(DeviceGrantError("invalid_request", "grant_type is missing."))
    if grant_type != DEVICE_CODE_GRANT:
        # RFC 6749 §5.2: a grant type this server does not support, not a bad grant.
        return _oauth_error(
            DeviceGrantError("unsupported_grant_type", f"Only {DEVICE_CODE_GRANT} is supported.")
        )
    try:
        created = device_token_poll(
            device_code=request.POST.get("device_code", ""),
            client_id=request.POST.get("client_id", ""),
            ip=client_ip(request),
        )
    except DeviceGrantError as error:
        return _oauth_error(error)
    return _oauth_json(
        {
            "access_token": created.secret,
            "token_type": "Bearer",
            "expires_in": int(CLI_LIFETIME.total_seconds()),
            "scope": " ".join(created.key.scopes),
            # RFC 6749 §5.1 allows more parameters: what the CLI tells its user it replaced.
            "replaced_keys": list(created.replaced_hints),
        }
    )


def _staff_memberships(request: SignedInRequest) -> list[Membership]:
    """The workspaces this person may log the CLI in to: owner or admin there, and a second
    factor set up where the workspace requires one (as every dashboard page demands)."""
    memberships = (
        Membership.objects.select_related("workspace")
        .filter(user=request.user, role__in=STAFF_ROLES)
        .order_by("created_at", "id")
    )
    if is_mfa_enabled(request.user):
        return list(memberships)
    return [m for m in memberships if not m.workspace.require_two_factor]


def _two_factor_first(request: SignedInRequest) -> HttpResponse | None:
    """The way to the two-factor set-up when every workspace of this person's requires it."""
    blocked = (
        Membership.objects.filter(
            user=request.user, role__in=STAFF_ROLES, workspace__require_two_factor=True
        )
        .select_related("workspace")
        .first()
    )
    if blocked is None or is_mfa_enabled(request.user):
        return None
    messages.warning(
        request,
        f"{blocked.workspace.name} requires two-factor authentication: add an authenticator "
        "app or a passkey, then approve the CLI login.",
    )
    return redirect("mfa_index")


def _scope_rows(requested: list[str], chosen: list[str]) -> list[dict[str, Any]]:
    """The Read/Write matrix of key creation, limited to what the CLI asked for."""
    return [
        {
            "label": group.capitalize(),
            "boxes": [
                {
                    "scope": f"{group}:{action}",
                    "label": action.capitalize(),
                    "requested": f"{group}:{action}" in requested,
                    "checked": f"{group}:{action}" in chosen,
                }
                for action in ACTIONS
            ],
        }
        for group in GROUPS
    ]


@login_required
@require_http_methods(["GET", "POST"])
@recent_authentication_required
def approve(request: SignedInRequest) -> HttpResponse:
    """/device: enter (or confirm) the code the terminal shows, then approve or deny."""
    memberships = _staff_memberships(request)
    raw_code = request.POST.get("user_code") or request.GET.get("user_code")
    context: dict[str, Any] = {"memberships": memberships, "user_code": raw_code or ""}
    if not memberships:
        if (refusal := _two_factor_first(request)) is not None:
            return refusal
        context["error"] = "Only owners and admins of a workspace can log in the CLI."
        return render(request, "devices/device.html", context, status=403)
    if raw_code is None:
        return render(request, "devices/device.html", context)
    try:
        authorization = device_authorization_find(user=request.user, raw_code=raw_code)
    except InvalidInput as error:
        context["error"] = error.message
        return render(request, "devices/device.html", context, status=400)
    context.update(
        authorization=authorization,
        scope_rows=_scope_rows(authorization.grantable_scopes, authorization.suggested_scopes),
    )
    if request.method == "GET" or "decision" not in request.POST:
        return render(request, "devices/device_confirm.html", context)
    if request.POST["decision"] == "deny":
        device_authorization_deny(authorization=authorization, user=request.user)
        return render(request, "devices/device_done.html", {"approved": False})
    by_id = {str(m.workspace_id): m for m in memberships}
    membership = by_id.get(request.POST.get("workspace", ""))
    chosen = request.POST.getlist("scopes")
    context["scope_rows"] = _scope_rows(authorization.grantable_scopes, chosen)
    if membership is None:
        context["error"] = "Choose one of your workspaces."
        return render(request, "devices/device_confirm.html", context, status=400)
    try:
        device_authorization_approve(
            authorization=authorization,
            user=request.user,
            workspace=membership.workspace,
            scopes=chosen,
        )
    except InvalidInput as error:
        context["error"] = error.message
        return render(request, "devices/device_confirm.html", context, status=400)
    return render(
        request,
        "devices/device_done.html",
        {"approved": True, "authorization": authorization, "workspace": membership.workspace},
    )


@csrf_exempt
@require_POST
def revoke(request: HttpRequest) -> JsonResponse:
    """POST /oauth/revoke (RFC 7009): `gatehouse logout`. Holding a key is enough to revoke it;
    an unknown or already revoked token is answered the same way, as the RFC asks."""
    if "token" not in request.POST:
        return _oauth_error(DeviceGrantError("invalid_request", "Send the token to revoke."))
    key = api_key_find_by_secret(request.POST["token"])
    if key is not None:
        api_key_revoke(key=key, actor=Actor.of_key(key, client_ip(request)))
    return _oauth_json({})
