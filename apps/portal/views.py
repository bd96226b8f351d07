"""The member portal: what a community member sees after signing in."""

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from apps.communities.models import Community
from apps.workspaces.decorators import WorkspaceRequest, workspace_member_required


@require_http_methods(["GET"])
@workspace_member_required
def portal_home(request: WorkspaceRequest) -> HttpResponse:
    communities = Community.objects.filter(
        workspace=request.workspace, memberships__user=request.user
    )
    return render(request, "portal/home.html", {"communities": communities})
