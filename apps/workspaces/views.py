from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from apps.accounts.models import SignedInRequest
from apps.audit.services import request_actor

from .choices import PLAN_MAX_VIDEO_QUALITY
from .decorators import WorkspaceRequest, workspace_staff_required
from .forms import WorkspaceSettingsForm
from .models import Membership
from .selectors import choose_workspace, current_membership
from .services import workspace_update


@require_http_methods(["GET", "POST"])
@workspace_staff_required(owner_only=True)
def workspace_settings(request: WorkspaceRequest) -> HttpResponse:
    workspace = request.workspace
    initial = {field: getattr(workspace, field) for field in WorkspaceSettingsForm.base_fields}
    form = WorkspaceSettingsForm(
        request.POST or None, initial=initial, workspace=workspace, user=request.user
    )
    if request.method == "POST" and form.is_valid():
        changes = form.changes()
        if changes:
            workspace_update(workspace=workspace, changes=changes, actor=request_actor(request))
            messages.success(request, "Settings saved.")
        else:
            messages.info(request, "Nothing changed.")
        return redirect("workspaces:settings")
    return render(
        request,
        "workspaces/settings.html",
        {
            "form": form,
            "workspace": workspace,
            "plan": workspace.get_plan_display(),
            "plan_max_quality": PLAN_MAX_VIDEO_QUALITY[workspace.plan],
        },
    )


@require_http_methods(["POST"])
@login_required
def workspace_switch(request: SignedInRequest) -> HttpResponse:
    """The header's workspace switcher: every page then shows the chosen workspace."""
    membership = choose_workspace(request, request.POST.get("workspace", ""))
    if membership is None:
        messages.error(request, "You are not in that workspace any more.")
    else:
        messages.success(request, f"Switched to {membership.workspace.name}.")
    return redirect("home")


@require_http_methods(["GET"])
def home(request: HttpRequest) -> HttpResponse:
    """Where `/` leads: the chosen workspace's dashboard, or the member portal, or sign-in."""
    if not request.user.is_authenticated:
        return redirect("account_login")
    membership = current_membership(request)
    if membership is None:
        return render(request, "accounts/no_workspace.html", status=403)
    if membership.role == Membership.Role.MEMBER:
        return redirect("portal:home")
    return redirect("key_pages:list")
