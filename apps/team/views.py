"""The Team page: owners add teammates as owner or admin, change and remove their roles."""

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from apps.accounts.sudo import recent_authentication_required
from apps.audit.services import request_actor
from apps.common.validation import InvalidInput
from apps.invitations.services import invitation_create, pending_invitations
from apps.service_accounts.services import service_accounts_of
from apps.workspaces.decorators import WorkspaceRequest, workspace_staff_required
from apps.workspaces.models import Membership
from apps.workspaces.selectors import STAFF_ROLES
from apps.workspaces.services import team_change_role, team_remove

from .keys_in_use import keys_in_use

ROLE_CHOICES = [(role.value, role.label) for role in STAFF_ROLES]


class TeamInviteForm(forms.Form):
    email = forms.EmailField(label="E-mail address")
    role = forms.ChoiceField(choices=ROLE_CHOICES, initial=Membership.Role.ADMIN)


def _is_owner(request: WorkspaceRequest) -> bool:
    return request.membership.role == Membership.Role.OWNER


@require_http_methods(["GET", "POST"])
@workspace_staff_required()
@recent_authentication_required(allow_get=True)
def team(request: WorkspaceRequest) -> HttpResponse:
    form = TeamInviteForm(request.POST or None)
    if request.method == "POST":
        if not _is_owner(request):
            raise PermissionDenied("Only owners change the team.")
        if form.is_valid():
            try:
                invitation, _ = invitation_create(
                    workspace=request.workspace,
                    email=form.cleaned_data["email"],
                    role=form.cleaned_data["role"],
                    actor=request_actor(request),
                    base_url=request.build_absolute_uri("/"),
                )
            except InvalidInput as error:
                form.add_error("email" if error.field == "email" else None, error.message)
            else:
                messages.success(
                    request,
                    f"Invited {invitation.email} as {invitation.get_role_display().lower()}: "
                    "they join once they accept the e-mailed invitation.",
                )
                return redirect("team:list")
    teammates = (
        Membership.objects.filter(
            workspace=request.workspace, role__in=STAFF_ROLES, user__is_service_account=False
        )
        .select_related("user")
        .order_by("user__email")
    )
    return render(
        request,
        "team/team.html",
        {
            "form": form,
            "teammates": teammates,
            "invitations": pending_invitations(request.workspace),
            "can_edit": _is_owner(request),
            "role_choices": ROLE_CHOICES,
            "service_accounts": service_accounts_of(request.workspace),
        },
    )


@require_http_methods(["POST"])
@workspace_staff_required(owner_only=True)
@recent_authentication_required
def team_member_update(request: WorkspaceRequest, membership_id: int) -> HttpResponse:
    membership = get_object_or_404(
        Membership.objects.select_related("user", "workspace"),
        pk=membership_id,
        workspace=request.workspace,
        role__in=STAFF_ROLES,
        user__is_service_account=False,
    )
    demoting = membership.role == Membership.Role.OWNER and request.POST.get("role") == "admin"
    if (
        demoting
        and request.POST.get("confirm") != "1"
        and keys_in_use(request.workspace, membership.user)
    ):
        # Their keys in use lose the owner's powers: show them, and the hand-over, first.
        return redirect(reverse("team:remove", args=[membership.pk]) + "?demote=1")
    try:
        if request.POST.get("action") == "remove":
            team_remove(membership=membership, actor=request_actor(request))
            messages.success(request, f"Removed {membership.user.email}; their keys are revoked.")
        else:
            updated = team_change_role(
                membership=membership,
                role=request.POST.get("role", ""),
                actor=request_actor(request),
            )
            messages.success(request, f"{updated.user.email} is now {updated.role}.")
    except InvalidInput as error:
        messages.error(request, error.message)
    return redirect("team:list")
