"""OAuth sign-ins in the audit log: each action's code and the words people read."""

from apps.audit.actions import audit_action

OAUTH_AUTHORIZED = audit_action("oauth.authorized", "App connected")
OAUTH_REFRESHED = audit_action("oauth.refreshed", "Connected app refreshed its key")
OAUTH_REVOKED = audit_action("oauth.revoked", "App disconnected")
OAUTH_REFRESH_REUSED = audit_action("oauth.refresh_reused", "Used refresh token presented")
