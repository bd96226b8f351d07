"""SCIM tokens in the audit log: codes and the words people read. (What SCIM does to the team is
recorded with the team's own actions, the identity provider as their actor.)"""

from apps.audit.actions import audit_action

SCIM_TOKEN_CREATED = audit_action("scim_token.created", "SCIM token created")
SCIM_TOKEN_REVOKED = audit_action("scim_token.revoked", "SCIM token revoked")
SCIM_TOKEN_ROLLED = audit_action("scim_token.rolled", "SCIM token rolled")
