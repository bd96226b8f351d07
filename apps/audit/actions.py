"""Audit actions: each app declares its own, with the words people read, in its
`audit_actions.py`; the audit log stores the code and shows the label.

    KEY_CREATED = audit_action("key.created", "Key created")   # apps/api_keys/audit_actions.py

The audit app discovers every installed app's module at start, so the Audit page's filter and
labels know all actions without the audit app naming any app.
"""

from django.utils.module_loading import autodiscover_modules

_LABELS: dict[str, str] = {}


def audit_action(code: str, label: str) -> str:
    """Register an action (`key.created`) with its label; returns the code to record."""
    if _LABELS.setdefault(code, label) != label:
        raise ValueError(f"The audit action {code!r} is declared twice with different labels.")
    return code


def action_label(code: str) -> str:
    """The words for an action; an unknown (retired) code reads as itself."""
    return _LABELS.get(code, code)


def action_choices() -> list[tuple[str, str]]:
    """Every known action as (code, label), by label: the Audit page's filter."""
    return sorted(_LABELS.items(), key=lambda item: item[1])


def discover_audit_actions() -> None:
    """Import each installed app's `audit_actions` module (AuditConfig.ready())."""
    autodiscover_modules("audit_actions")
