"""A key's life in the audit log: each action's code and the words people read."""

from apps.audit.actions import audit_action

KEY_CREATED = audit_action("key.created", "Key created")
KEY_REVOKED = audit_action("key.revoked", "Key revoked")
KEY_FIRST_USED = audit_action("key.first_used", "Key first used")
KEY_LEAKED = audit_action("key.leaked", "Key found leaked")
KEY_ROLLED = audit_action("key.rolled", "Key rolled")
KEY_UPDATED = audit_action("key.updated", "Key renamed or described")
KEY_NARROWED = audit_action("key.narrowed", "Key permissions narrowed")
MEMBER_KEY_CREATED = audit_action("member_key.created", "Member key created")
MEMBER_KEY_REVOKED = audit_action("member_key.revoked", "Member key revoked")
KEY_APPROVAL_REQUESTED = audit_action("key.approval_requested", "Key waits for approval")
KEY_APPROVED = audit_action("key.approved", "Key approved")
KEY_DENIED = audit_action("key.denied", "Key denied")
