from collections.abc import Callable
from typing import Any

from django.http import HttpRequest
from django.urls import reverse

from .models import Membership
from .selectors import current_membership, request_places

NavItems = Callable[[Membership], list[dict[str, Any]]]
_owner_items: list[NavItems] = []


def register_owner_nav(items: NavItems) -> None:
    """Let an app above this one add items to an owner's navigation, after API keys and
    Connected apps (apps.key_pages: Approvals, with its count)."""
    if items not in _owner_items:
        _owner_items.append(items)


def navigation(request: HttpRequest) -> dict[str, Any]:
    """The workspace name and the side navigation of the base layout: the owner's dashboard,
    or the member portal for community members (and on the portal's own pages)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    membership = getattr(request, "membership", None) or current_membership(request)
    if membership is None:
        return {}
    if membership.role == Membership.Role.MEMBER:
        items: list[dict[str, Any]] = [
            {"label": "Communities", "url": reverse("portal:home"), "exact": True},
            {"label": "Your API keys", "url": reverse("portal:developer")},
            {"label": "Connected apps", "url": reverse("oauth:member_connected_apps")},
        ]
    else:
        items = [
            {"label": "API keys", "url": reverse("key_pages:list")},
            {"label": "Key health", "url": reverse("key_health:page")},
            {"label": "Connected apps", "url": reverse("oauth:connected_apps")},
            {"label": "Communities", "url": reverse("communities:list")},
        ]
        if membership.role == Membership.Role.OWNER:
            for owner_items in _owner_items:
                items += owner_items(membership)
            items += [
                {"label": "Settings", "url": reverse("workspaces:settings"), "exact": True},
                {"label": "Webhooks", "url": reverse("webhooks:list")},
                {"label": "Audit streaming", "url": reverse("audit_streams:list")},
                {"label": "Single sign-on", "url": reverse("sso:settings")},
            ]
        items += [
            {"label": "Team", "url": reverse("team:list")},
            {"label": "Usage", "url": reverse("usage:page")},
            {"label": "Logs", "url": reverse("request_log:page")},
            {"label": "Audit", "url": reverse("audit_pages:log")},
        ]
    # The item whose address matches most of the path is the current one (Approvals, not API
    # keys, on /integrations/api/waiting/).
    matching = [
        item
        for item in items
        if item["url"]
        and (
            request.path == item["url"]
            if item.get("exact")
            else request.path.startswith(item["url"])
        )
    ]
    current = max(matching, key=lambda item: len(item["url"]), default=None)
    for item in items:
        item["active"] = item is current
    places = request_places(request)
    return {
        "nav_workspace": membership.workspace,
        "nav_items": items,
        "nav_places": places if len(places) > 1 else [],
    }
