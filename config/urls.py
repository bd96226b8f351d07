from django.contrib import admin
from django.urls import include, path

import apps.common.urls  # noqa: F401 - registers the <id:...> converter the apps' routes use
from apps.accounts import views as account_views
from apps.api import views as api_views

from .mcp import mcp_endpoint

# The API and MCP first: they are resolved before the dashboard's routes are tried.
urlpatterns = [
    path("api/", include("config.api")),
    path("mcp", mcp_endpoint, name="mcp"),
    path("", include("apps.devices.urls")),
    path("", account_views.home, name="home"),
    path("", include("apps.accounts.urls")),
    path("integrations/api/", include("apps.api_keys.urls")),
    path("communities/", include("apps.communities.urls")),
    path("settings/", include("apps.workspaces.urls")),
    path("audit/", include("apps.audit.urls")),
    path("portal/", include("apps.portal.urls")),
    path("healthz", api_views.health, name="health"),
    path("admin/", admin.site.urls),
]
