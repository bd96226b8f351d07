"""Communities in the audit log: each action's code and the words people read."""

from apps.audit.actions import audit_action

COMMUNITY_MEMBER_REMOVED = audit_action("community.member_removed", "Community member removed")
