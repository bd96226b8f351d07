from apps.audit.actions import audit_action

KEY_NEW_NETWORK = audit_action("key.new_network", "Key used from a new network")
KEY_NEW_NETWORKS = audit_action("key.new_networks", "Key used from many new networks")
KEY_QUOTA_CHANGED = audit_action("key.quota_changed", "Key quota changed")
KEY_QUOTA_SET = audit_action("key.quota_set", "Key quota set")
KEY_QUOTA_WARNING = audit_action("key.quota_warning", "Key used 80 % of its quota")
KEY_QUOTA_EXHAUSTED = audit_action("key.quota_exhausted", "Key used its whole quota")
