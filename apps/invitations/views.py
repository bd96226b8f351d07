"""The invitation link a person follows, and the team's and communities' pending lists."""

from typing import cast

from allauth.account.adapter import get_adapter
from django.contrib import messages
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods

from apps.accounts.models import SignedInRequest
from apps.accounts.sudo import recent_authentication_required
from apps.audit.services import request_actor
from apps.common.http import client_ip
from apps.common.validation import InvalidInput
from apps.workspaces.decorators import WorkspaceRequest, workspace_staff_required
from apps.workspaces.models import Membership
from apps.workspaces.selectors import choose_workspace

from .models import Invitation
from .services import (
    invitation_accept,
    invitation_by_token,
    invitation_resend,
    invitation_withdraw,
    user_controls_address,
)


def _refusal(request: HttpRequest, invitation: Invitation | None, status: int) -> HttpResponse:
    return render(request, "invitations/refused.html", {"invitation": invitation}, status=status)


@require_http_methods(["GET", "POST"])
def invitation_open(request: HttpRequest, token: str) -> HttpResponse:
    """Show what the invitation offers; signed in as its address, accept it (POST)."""
    invitation = invitation_by_token(token)
    if invitation is None:
        return _refusal(request, None, 404)
    if invitation.state != Invitation.State.PENDING:
        return _refusal(request, invitation, 410)
    here = request.path
    if not request.user.is_authenticated:
        # Whoever opened the link received it at this address: sign-up through it needs no
        # second verification e-mail (allauth's documented hook for invitations).
        get_adapter(request).stash_verified_email(request, invitation.email)
        request.session["invitation_email"] = invitation.email
        query = urlencode({REDIRECT_FIELD_NAME: here})
        return render(
            request,
            "invitations/open.html",
            {
                "invitation": invitation,
                "sign_in_url": f"{reverse('account_login')}?{query}",
                "sign_up_url": f"{reverse('account_signup')}?{query}",
            },
        )
    if not user_controls_address(request.user, invitation.email):
        return render(
            request, "invitations/wrong_account.html", {"invitation": invitation}, status=403
        )
    if request.method == "POST":
        try:
            membership = invitation_accept(
                invitation=invitation, user=request.user, ip=client_ip(request)
            )
        except InvalidInput as error:
            messages.error(request, error.message)
            return redirect(here)
        request.session.pop("invitation_email", None)
        choose_workspace(cast(SignedInRequest, request), membership.workspace_id)
        messages.success(request, f"You are now {invitation.place}.")
        if membership.role == Membership.Role.MEMBER:
            return redirect("portal:home")
        return redirect("key_pages:list")
    return render(request, "invitations/open.html", {"invitation": invitation})


def _workspace_invitation(request: WorkspaceRequest, invitation_id: int) -> Invitation:
    invitation = get_object_or_404(
        Invitation.objects.select_related("workspace", "community", "invited_by"),
        pk=invitation_id,
        workspace=request.workspace,
    )
    # The team is the owners' to change; communities are any owner's or admin's.
    if invitation.community_id is None and request.membership.role != Membership.Role.OWNER:
        raise PermissionDenied("Only owners change the team.")
    return invitation


def _back(request: WorkspaceRequest, invitation: Invitation) -> HttpResponse:
    if invitation.community_id:
        return redirect("communities:detail", community_id=invitation.community_id)
    return redirect("team:list")


@require_http_methods(["POST"])
@workspace_staff_required()
@recent_authentication_required
def invitation_resend_view(request: WorkspaceRequest, invitation_id: int) -> HttpResponse:
    invitation = _workspace_invitation(request, invitation_id)
    try:
        invitation_resend(
            invitation=invitation,
            actor=request_actor(request),
            base_url=request.build_absolute_uri("/"),
        )
    except InvalidInput as error:
        messages.error(request, error.message)
    else:
        messages.success(request, f"Sent the invitation to {invitation.email} again.")
    return _back(request, invitation)


@require_http_methods(["POST"])
@workspace_staff_required()
@recent_authentication_required
def invitation_withdraw_view(request: WorkspaceRequest, invitation_id: int) -> HttpResponse:
    invitation = _workspace_invitation(request, invitation_id)
    try:
        invitation_withdraw(invitation=invitation, actor=request_actor(request))
    except InvalidInput as error:
        messages.error(request, error.message)
    else:
        messages.success(request, f"Withdrew the invitation to {invitation.email}.")
    return _back(request, invitation)
