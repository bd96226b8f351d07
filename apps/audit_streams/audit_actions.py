from apps.audit.actions import audit_action

STREAM_CREATED = audit_action("audit_stream.created", "Audit stream added")
STREAM_DELETED = audit_action("audit_stream.deleted", "Audit stream removed")
STREAM_PAUSED = audit_action("audit_stream.paused", "Audit stream paused")
STREAM_RESUMED = audit_action("audit_stream.resumed", "Audit stream resumed")
STREAM_DISABLED = audit_action("audit_stream.disabled", "Audit stream disabled after failures")
