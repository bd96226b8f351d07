"""Workspace settings and the team in the audit log: codes and the words people read."""

from apps.audit.actions import audit_action

SETTINGS_CHANGED = audit_action("settings.changed", "Settings changed")
TEAM_MEMBER_ADDED = audit_action("team.member_added", "Teammate added")
TEAM_ROLE_CHANGED = audit_action("team.role_changed", "Role changed")
TEAM_MEMBER_REMOVED = audit_action("team.member_removed", "Teammate removed")
