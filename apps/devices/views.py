"""The /device page where a person approves or denies a `gatehouse login` (RFC 8628 §3.3);
the protocol's endpoints are the authorization server's (apps/oauth)."""

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from apps.accounts.models import SignedInRequest
from apps.accounts.sudo import recent_authentication_required
from apps.api_keys.policy import approval_note, scopes_without_approval
from apps.common.validation import InvalidInput
from apps.key_pages.forms import asked_scope_rows
from apps.workspaces.gates import workspace_gate_refusal
from apps.workspaces.holders import two_factor_missing
from apps.workspaces.models import Membership
from apps.workspaces.selectors import STAFF_ROLES

from .approval import (
    device_authorization_approve,
    device_authorization_deny,
    device_authorization_find,
)


def _staff_memberships(request: SignedInRequest) -> list[Membership]:
    """The workspaces this person may log the CLI in to: owner or admin there, and a second
    factor set up where the workspace requires one (as every dashboard page demands)."""
    memberships = (
        Membership.objects.select_related("workspace")
        .filter(user=request.user, role__in=STAFF_ROLES)
        .order_by("created_at", "id")
    )
    return [m for m in memberships if not two_factor_missing(request.user, m.workspace)]


def _two_factor_first(request: SignedInRequest) -> HttpResponse | None:
    """The way to the two-factor set-up when every workspace of this person's requires it."""
    blocked = (
        Membership.objects.filter(
            user=request.user, role__in=STAFF_ROLES, workspace__require_two_factor=True
        )
        .select_related("workspace")
        .first()
    )
    if blocked is None or not two_factor_missing(request.user, blocked.workspace):
        return None
    messages.warning(
        request,
        f"{blocked.workspace.name} requires two-factor authentication: add an authenticator "
        "app or a passkey, then approve the CLI login.",
    )
    return redirect("mfa_index")


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
    # The CLI's key never waits for an owner: offer only what the approval policy leaves free
    # in the workspace chosen (the first until another is; approving checks it again).
    by_id = {str(m.workspace_id): m for m in memberships}
    wanted = request.POST.get("workspace") or request.GET.get("workspace") or ""
    chosen_place = by_id.get(wanted, memberships[0])
    # A workspace that requires single sign-on logs the CLI in only from a session signed in
    # through its provider (docs/product.md §16): there first, then back here.
    if (sso_first := workspace_gate_refusal(request, chosen_place)) is not None:
        return sso_first
    context["chosen_workspace"] = chosen_place.workspace_id
    policy, role = chosen_place.workspace.key_approval, chosen_place.role
    grantable = scopes_without_approval(policy, role, authorization.grantable_scopes)
    suggested = [s for s in authorization.suggested_scopes if s in grantable]
    if len(grantable) < len(authorization.grantable_scopes):
        context["approval_note"] = approval_note(policy, role)
    context["blocked"] = not grantable
    context.update(authorization=authorization, scope_rows=asked_scope_rows(grantable, suggested))
    if request.method == "GET" or "decision" not in request.POST:
        return render(request, "devices/device_confirm.html", context)
    if request.POST["decision"] == "deny":
        device_authorization_deny(authorization=authorization, user=request.user)
        return render(request, "devices/device_done.html", {"approved": False})
    membership = by_id.get(request.POST.get("workspace", ""))
    chosen = request.POST.getlist("scopes")
    context["scope_rows"] = asked_scope_rows(grantable, chosen)
    if membership is None:
        context["error"] = "Choose one of your workspaces."
        return render(request, "devices/device_confirm.html", context, status=400)
    if (sso_first := workspace_gate_refusal(request, membership)) is not None:
        return sso_first
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
