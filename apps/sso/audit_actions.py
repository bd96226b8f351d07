"""Single sign-on in the audit log: codes and the words people read."""

from apps.audit.actions import audit_action

SSO_CONFIGURED = audit_action("sso.configured", "Single sign-on provider set")
SSO_MODE_CHANGED = audit_action("sso.mode_changed", "Single sign-on mode changed")
SSO_TESTED = audit_action("sso.tested", "Single sign-on tested")
SSO_REMOVED = audit_action("sso.removed", "Single sign-on removed")
