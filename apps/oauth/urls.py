from django.urls import path

from . import connected, consent, views

app_name = "oauth"

urlpatterns = [
    path(".well-known/oauth-protected-resource/mcp", views.protected_resource, name="resource"),
    path(".well-known/oauth-authorization-server", views.authorization_server, name="metadata"),
    path("oauth/authorize", consent.authorize, name="authorize"),
    path("oauth/token", views.token, name="token"),
    path("oauth/device/code", views.device_code, name="device_code"),
    path("oauth/register", views.register, name="register"),
    path("oauth/revoke", views.revoke, name="revoke"),
    path("integrations/connected-apps/", connected.connected_apps, name="connected_apps"),
    path(
        "integrations/connected-apps/<id:grant_id>/revoke/",
        connected.revoke_grant,
        name="revoke_grant",
    ),
    path(
        "portal/settings/connected-apps/",
        connected.member_connected_apps,
        name="member_connected_apps",
    ),
    path(
        "portal/settings/connected-apps/<id:grant_id>/revoke/",
        connected.member_revoke_grant,
        name="member_revoke_grant",
    ),
]
