"""Communities in the owner's dashboard: create them, add and remove members."""

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from apps.accounts.models import User
from apps.audit.services import request_actor
from apps.common.validation import InvalidInput
from apps.common.wording import pluralize
from apps.invitations.services import invitation_create, pending_invitations
from apps.workspaces.decorators import WorkspaceRequest, workspace_staff_required
from apps.workspaces.models import Membership

from .forms import AddMemberForm, CommunityForm
from .models import Community
from .services import community_create, community_member_remove


def get_workspace_community_or_404(request: WorkspaceRequest, community_id: int) -> Community:
    return get_object_or_404(Community, pk=community_id, workspace=request.workspace)


@require_http_methods(["GET", "POST"])
@workspace_staff_required()
def community_list(request: WorkspaceRequest) -> HttpResponse:
    form = CommunityForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        community = community_create(workspace=request.workspace, name=form.cleaned_data["name"])
        messages.success(request, f"Created the community “{community.name}”.")
        return redirect("communities:detail", community_id=community.pk)
    communities = Community.objects.filter(workspace=request.workspace)
    return render(request, "communities/list.html", {"form": form, "communities": communities})


@require_http_methods(["GET", "POST"])
@workspace_staff_required()
def community_detail(request: WorkspaceRequest, community_id: int) -> HttpResponse:
    community = get_workspace_community_or_404(request, community_id)
    form = AddMemberForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            invitation, _ = invitation_create(
                workspace=request.workspace,
                community=community,
                email=form.cleaned_data["email"],
                role=Membership.Role.MEMBER,
                actor=request_actor(request),
                base_url=request.build_absolute_uri("/"),
            )
        except InvalidInput as error:
            form.add_error("email", error.message)
        else:
            messages.success(
                request,
                f"Invited {invitation.email} to {community.name}: they join once they accept "
                "the e-mailed invitation.",
            )
            return redirect("communities:detail", community_id=community.pk)
    members = community.memberships.select_related("user").order_by("user__email")
    return render(
        request,
        "communities/detail.html",
        {
            "community": community,
            "members": members,
            "form": form,
            "invitations": pending_invitations(request.workspace, community=community),
        },
    )


@require_http_methods(["GET", "POST"])
@workspace_staff_required()
def community_member_delete(
    request: WorkspaceRequest, community_id: int, user_id: int
) -> HttpResponse:
    """GET asks for confirmation (the path without JavaScript); POST removes."""
    community = get_workspace_community_or_404(request, community_id)
    user = get_object_or_404(User, pk=user_id, community_memberships__community=community)
    if request.method == "GET":
        return render(
            request,
            "confirm.html",
            {
                "title": f"Remove {user.email} from {community.name}?",
                "message": f"Their keys lose access to {community.name} at once; out of their "
                "last community here, their member keys are revoked.",
                "action_label": "Remove member",
                "cancel_url": reverse("communities:detail", args=[community.pk]),
            },
        )
    revoked = community_member_remove(community=community, user=user, actor=request_actor(request))
    if revoked:
        messages.success(
            request,
            f"Removed {user.email} from {community.name}, their last community here; "
            f"their {revoked} member key{pluralize(revoked)} {pluralize(revoked, 'was,were')} "
            "revoked.",
        )
    else:
        messages.success(
            request, f"Removed {user.email} from {community.name}; their keys lost access to it."
        )
    return redirect("communities:detail", community_id=community.pk)
