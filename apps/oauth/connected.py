"""Connected apps: each OAuth grant as one row, in the dashboard (every grant of the workspace,
for owners and admins) and in the member portal (a member's own), each revocable."""

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from apps.audit.services import Actor
from apps.common.http import client_ip
from apps.workspaces.decorators import (
    WorkspaceRequest,
    workspace_member_required,
    workspace_staff_required,
)

from .issuing import grant_revoke
from .models import OAuthGrant


def _grants(request: WorkspaceRequest, *, own: bool) -> list[OAuthGrant]:
    grants = OAuthGrant.objects.filter(workspace=request.workspace)
    if own:
        grants = grants.filter(user=request.user)
    return list(grants.select_related("client", "user", "key").order_by("-created_at"))


def _page(request: WorkspaceRequest, *, own: bool, revoke_name: str) -> HttpResponse:
    grants = _grants(request, own=own)
    context = {
        # A key revoked on its own page (or leaked) ends the app's connection too.
        "active": [g for g in grants if g.is_active and g.key.revoked_at is None],
        "ended": [g for g in grants if not g.is_active or g.key.revoked_at is not None][:20],
        "own": own,
        "revoke_name": revoke_name,
        "mcp_url": request.build_absolute_uri(reverse("mcp")),
    }
    return render(request, "oauth/connected_apps.html", context)


def _revoke(request: WorkspaceRequest, grant_id: int, *, own: bool, back: str) -> HttpResponse:
    grants = OAuthGrant.objects.filter(workspace=request.workspace)
    if own:
        grants = grants.filter(user=request.user)
    grant = get_object_or_404(grants.select_related("client", "user"), pk=grant_id)
    if grant_revoke(grant, actor=Actor.of_user(request.user, client_ip(request))):
        messages.success(
            request, f"{grant.client_name} is disconnected: its key and refresh token stopped."
        )
    else:
        messages.info(request, f"{grant.client_name} was already disconnected.")
    return redirect(back)


@require_GET
@workspace_staff_required()
def connected_apps(request: WorkspaceRequest) -> HttpResponse:
    """Every app connected to this workspace by OAuth, whoever connected it."""
    return _page(request, own=False, revoke_name="oauth:revoke_grant")


@require_POST
@workspace_staff_required()
def revoke_grant(request: WorkspaceRequest, grant_id: int) -> HttpResponse:
    return _revoke(request, grant_id, own=False, back="oauth:connected_apps")


@require_GET
@workspace_member_required
def member_connected_apps(request: WorkspaceRequest) -> HttpResponse:
    """The apps a community member connected, with their member keys."""
    return _page(request, own=True, revoke_name="oauth:member_revoke_grant")


@require_POST
@workspace_member_required
def member_revoke_grant(request: WorkspaceRequest, grant_id: int) -> HttpResponse:
    return _revoke(request, grant_id, own=True, back="oauth:member_connected_apps")
