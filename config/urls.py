from allauth.account import views as allauth_views
from allauth.account.decorators import secure_admin_login
from django.contrib import admin
from django.urls import include, path

import apps.common.urls  # noqa: F401 - registers the <id:...> converter the apps' routes use
from apps.accounts import views as account_views
from apps.audit_streams.devreceiver import dev_audit_streams, dev_stream_receive
from apps.common.devmail import dev_mailbox
from apps.webhooks.devreceiver import dev_receive, dev_webhooks
from apps.workspaces import views as workspace_views

from .cli_package import cli_download
from .mcp import mcp_endpoint
from .openapi import oauth_openapi

# The admin signs in through the same throttled, two-factor sign-in as the dashboard.
admin.site.login = secure_admin_login(admin.site.login)  # type: ignore[method-assign]

# The API and MCP first: they are resolved before the dashboard's routes are tried.
urlpatterns = [
    path("api/", include("config.api")),
    path("mcp", mcp_endpoint, name="mcp"),
    path("scim/v2/", include("apps.scim.urls")),
    path("", include("apps.devices.urls")),
    path("oauth/openapi.json", oauth_openapi, name="oauth_openapi"),
    path("", include("apps.oauth.urls")),
    path("", workspace_views.home, name="home"),
    path("account/security/", account_views.security_log, name="security_log"),
    path("account/", include("allauth.urls")),
    # Sign-in, sign-up and sign-out at the dashboard's own addresses. Listed after allauth's
    # routes so that reversing their names gives these.
    path("sign-in/", allauth_views.login, name="account_login"),
    path("sign-up/", allauth_views.signup, name="account_signup"),
    path("sign-out/", allauth_views.logout, name="account_logout"),
    path("invitations/", include("apps.invitations.urls")),
    path("workspace/switch/", workspace_views.workspace_switch, name="switch_workspace"),
    path("integrations/api/health/", include("apps.key_health.urls")),
    path("integrations/api/", include("apps.key_pages.urls")),
    path("communities/", include("apps.communities.urls")),
    path("settings/team/", include("apps.team.urls")),
    path("settings/webhooks/", include("apps.webhooks.urls")),
    path("settings/audit-streaming/", include("apps.audit_streams.urls")),
    path("settings/identity-provider/", include("apps.scim.page_urls")),
    path("", include("apps.sso.urls")),
    path("settings/", include("apps.workspaces.urls")),
    path("audit/", include("apps.audit_pages.urls")),
    path("usage/", include("apps.usage.urls")),
    path("logs/", include("apps.request_log.urls")),
    path("portal/", include("apps.portal.urls")),
    path("", include("apps.operations.urls")),  # /healthz, /metrics, /livez, /readyz
    path("dev/mail/", dev_mailbox, name="dev_mailbox"),  # a 404 unless DEBUG is on
    path("dev/webhooks/", dev_webhooks, name="dev_webhooks"),  # the same
    path("dev/webhooks/receive", dev_receive, name="dev_webhook_receive"),
    path("dev/audit-streams/", dev_audit_streams, name="dev_audit_streams"),  # the same
    path("dev/audit-streams/receive", dev_stream_receive, name="dev_audit_stream_receive"),
    path("cli/gatehouse.tar.gz", cli_download, name="cli_download"),
    path("admin/", admin.site.urls),
]

# OAuth's JSON for a refused Host on the endpoints programs call (apps/oauth/views.py).
handler400 = "apps.oauth.views.bad_request"
handler500 = "apps.common.middleware.server_error"
