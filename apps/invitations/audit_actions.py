"""Invitations in the audit log: each action's code and the words people read."""

from apps.audit.actions import audit_action

INVITATION_SENT = audit_action("invitation.sent", "Invitation sent")
INVITATION_ACCEPTED = audit_action("invitation.accepted", "Invitation accepted")
INVITATION_WITHDRAWN = audit_action("invitation.withdrawn", "Invitation withdrawn")
