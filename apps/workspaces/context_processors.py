from django.http import HttpRequest
from django.urls import reverse

from .models import Membership
from .selectors import dashboard_membership


def navigation(request: HttpRequest) -> dict:
    """The workspace name and the side navigation of the dashboard's base layout."""
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    membership = getattr(request, "membership", None) or dashboard_membership(request.user)
    if membership is None:
        return {}
    path = request.path
    items = [
        {"label": "Integrations → API, MCP and CLI", "url": reverse("api_keys:list")},
    ]
    if membership.role == Membership.Role.OWNER:
        items.append({"label": "Settings", "url": reverse("workspaces:settings")})
    items += [{"label": "Audit", "url": None}, {"label": "Members", "url": None}]
    for item in items:
        item["active"] = bool(item["url"]) and path.startswith(item["url"])
    return {"nav_workspace": membership.workspace, "nav_items": items}
