"""Workspace settings and the team in the audit log: codes and the words people read."""

from apps.accounts.models import AccountEvent
from apps.audit.actions import audit_action

SETTINGS_CHANGED = audit_action("settings.changed", "Settings changed")
TEAM_MEMBER_ADDED = audit_action("team.member_added", "Teammate added")
TEAM_ROLE_CHANGED = audit_action("team.role_changed", "Role changed")
TEAM_MEMBER_REMOVED = audit_action("team.member_removed", "Teammate removed")
# The workspace's identity provider closed a teammate's access, or opened it again (§16).
MEMBER_SUSPENDED = audit_action("member.suspended", "Teammate suspended")
MEMBER_RESTORED = audit_action("member.restored", "Teammate restored")
# A person's account events, in each of their workspaces (account_audit.py): account.signed_in,
# account.sign_in_failed, account.password_changed, …, with the security log's words.
ACCOUNT_ACTIONS = {
    action.value: audit_action(f"account.{action.value}", label)
    for action, label in zip(AccountEvent.Action, AccountEvent.Action.labels, strict=True)
}
