"""Service accounts and hand-overs in the audit log: codes and the words people read."""

from apps.audit.actions import audit_action

SERVICE_ACCOUNT_CREATED = audit_action("service_account.created", "Service account created")
SERVICE_ACCOUNT_UPDATED = audit_action("service_account.updated", "Service account changed")
SERVICE_ACCOUNT_DELETED = audit_action("service_account.deleted", "Service account deleted")
KEY_HANDED_OVER = audit_action("key.handed_over", "Key handed over to a service account")
