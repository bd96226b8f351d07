"""The key pages' two audiences, and how one page function serves both.

Owners and admins manage every key of the workspace under API keys;
community members manage their own member keys under Your API keys in the portal. Each
page is one function taking a `KeyPages`; `for_both_audiences` makes its two views.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.http.response import HttpResponseBase
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from apps.accounts.sudo import recent_authentication_required
from apps.api_keys.models import ApiKey, ApiKeyQuerySet
from apps.workspaces.decorators import (
    WorkspaceRequest,
    workspace_member_required,
    workspace_staff_required,
)

from .snippets import mcp_client_snippets, mcp_key_snippets

ACTIONS = ("create", "revoke", "roll", "detail", "details", "narrow", "export", "bulk_revoke")


@dataclass(frozen=True)
class KeyPages:
    """One audience of the key pages: its URL names and the keys it may see."""

    namespace: str  # the URL namespace
    member: bool  # a member's own member keys (portal), or every key of the workspace
    try_endpoint: str  # the API route a new key is tried on
    prefix: str = ""  # URL names are `namespace:prefix + action`
    list_page: str = "list"  # the URL name of the list

    def url_name(self, action: str) -> str:
        name = self.list_page if action == "list" else self.prefix + action
        return f"{self.namespace}:{name}"

    def keys(self, request: WorkspaceRequest) -> ApiKeyQuerySet:
        """Every key these pages may show: looked up through the signed-in user, always."""
        keys = ApiKey.objects.filter(workspace=request.workspace)
        if self.member:
            keys = keys.filter(user=request.user, kind=ApiKey.Kind.MEMBER)
        return keys

    def context(self, request: WorkspaceRequest) -> dict[str, Any]:
        mcp_url = request.build_absolute_uri(reverse("mcp"))
        return {
            "member_pages": self.member,
            "default_rate_limit": settings.API_RATE_LIMIT_PER_MINUTE,
            "list_url": reverse(self.url_name("list")),
            "create_url": reverse(self.url_name("create")),
            "export_url": reverse(self.url_name("export")),
            "bulk_revoke_url": reverse(self.url_name("bulk_revoke")),
            **{f"{action}_name": self.url_name(action) for action in ACTIONS},
            "api_url": request.build_absolute_uri(reverse(self.try_endpoint)),
            "openapi_url": request.build_absolute_uri(reverse("api:openapi")),
            "mcp_url": mcp_url,
            "server_url": request.build_absolute_uri("/").rstrip("/"),
            "mcp_snippets": mcp_client_snippets(mcp_url),
            "mcp_key_snippets": mcp_key_snippets(mcp_url),
            # Owners roll and receive service accounts' keys (docs/product.md §12).
            "is_owner": not self.member and request.membership.role == "owner",
        }


DASHBOARD = KeyPages(namespace="key_pages", member=False, try_endpoint="api:workspace")
PORTAL = KeyPages(
    namespace="portal",
    member=True,
    try_endpoint="api:communities",
    prefix="key_",
    list_page="developer",
)

Page = Callable[..., HttpResponseBase]


def for_both_audiences(page: Page, methods: list[str], *, sudo: bool = False) -> tuple[Page, Page]:
    """The dashboard's and the portal's view of `page`: each behind its audience's gate (staff
    of the chosen workspace, or a community member in it), sudo mode when `sudo`."""

    def build(pages: KeyPages, gate: Callable[[Page], Page]) -> Page:
        def view(request: WorkspaceRequest, **kwargs: Any) -> HttpResponseBase:
            return page(request, pages, **kwargs)

        view.__name__ = view.__qualname__ = f"{pages.namespace}_{page.__name__}"
        view.__doc__ = page.__doc__
        guarded = recent_authentication_required(view) if sudo else view
        return require_http_methods(methods)(gate(guarded))

    return build(DASHBOARD, workspace_staff_required()), build(PORTAL, workspace_member_required)
