from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from apps.workspaces.models import Membership
from apps.workspaces.selectors import current_membership


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
    return redirect("api_keys:list")
