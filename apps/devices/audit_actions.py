"""CLI logins in the audit log: each action's code and the words people read."""

from apps.audit.actions import audit_action

CLI_LOGIN = audit_action("cli.login", "CLI login")
