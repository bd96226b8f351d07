"""Leak reports in the audit log beyond `key.leaked`: codes and the words people read."""

from apps.audit.actions import audit_action

# A handed-over key's old secret was reported leaked or revoked: it stops acting as the new key.
KEY_GRACE_ENDED = audit_action("key.grace_ended", "Old secret's grace ended")
