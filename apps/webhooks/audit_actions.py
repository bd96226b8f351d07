from apps.audit.actions import audit_action

WEBHOOK_CREATED = audit_action("webhook.created", "Webhook endpoint added")
WEBHOOK_UPDATED = audit_action("webhook.updated", "Webhook endpoint changed")
WEBHOOK_SECRET_ROLLED = audit_action("webhook.secret_rolled", "Webhook secret rolled")
WEBHOOK_DELETED = audit_action("webhook.deleted", "Webhook endpoint removed")
WEBHOOK_DISABLED = audit_action("webhook.disabled", "Webhook endpoint disabled after failures")
WEBHOOK_REDELIVERED = audit_action("webhook.redelivered", "Webhook event redelivered")
