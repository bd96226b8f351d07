"""Idle keys in the audit log: the warning's code and the words people read (the revocation is
`key.revoked` with reason `idle`)."""

from apps.audit.actions import audit_action

KEY_IDLE_WARNING = audit_action("key.idle_warning", "Key idle: revoked in 7 days unless used")
