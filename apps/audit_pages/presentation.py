"""Audit events in people's words: field names as the Settings page labels them, values as
people read them ("On", "90 days", "Products: read"), for the page and the CSV alike."""

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from apps.api.scopes import EVERY_SCOPE, summarize_scopes
from apps.api_keys.restrictions import Restrictions
from apps.audit.models import AuditEvent
from apps.common.dates import day_text, moment_text
from apps.common.wording import pluralize
from apps.workspaces.choices import TRANSCRIPTION_LANGUAGES, VideoQuality

FIELD_LABELS = {
    "name": "Workspace name",
    "timezone": "Time zone",
    "auto_transcribe_uploads": "Automatic transcription",
    "transcription_language": "Transcription language",
    "default_video_quality": "Default video quality",
    "key_max_lifetime_days": "Longest lifetime of a new key",
    "key_allow_no_expiry": "“No expiry” offered for new keys",
    "require_two_factor": "Two-factor authentication required",
    "key_idle_days": "Keys revoked when unused for",
    "description": "Description",
    "restrictions": "Restrictions",
    "endpoint": "Webhook endpoint",
}
ROLE_LABELS = {"owner": "Owner", "admin": "Admin", "member": "Member"}


def field_label(field: str) -> str:
    return FIELD_LABELS.get(field, field.replace("_", " ").capitalize())


def human_value(field: str, value: Any) -> str:
    """One value of a change, as the dashboard shows it."""
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "On" if value else "Off"
    if field == "restrictions" and isinstance(value, dict):
        return Restrictions.from_json(value).summary() or "None"
    if isinstance(value, list):
        if all(item in EVERY_SCOPE for item in value):
            return summarize_scopes(value)
        return ", ".join(str(item) for item in value)
    if field == "transcription_language":
        return TRANSCRIPTION_LANGUAGES.get(value, value)
    if field == "default_video_quality":
        return dict(VideoQuality.choices).get(value, value)
    if field in ("key_max_lifetime_days", "key_idle_days"):
        return f"{value} day{pluralize(value)}"
    if field == "role" or value in ROLE_LABELS:
        return ROLE_LABELS.get(value, value)
    return str(value)


def event_change(event: AuditEvent) -> dict[str, Any] | None:
    """The before → after of a settings, role, rename or narrowing event, labelled."""
    data = event.data or {}
    if "before" not in data and "after" not in data:
        return None
    field = data.get("field") or ("role" if "email" in data else "permissions")
    label = "Role" if field == "role" else "Permissions" if field == "permissions" else None
    return {
        "field": field,
        "label": label or field_label(field),
        "before": human_value(field, data.get("before")),
        "after": human_value(field, data.get("after")),
    }


def event_subject(event: AuditEvent) -> str:
    """What the event is about: a settings field by its label, otherwise the stored subject."""
    data = event.data or {}
    if data.get("field") and event.subject == data["field"]:
        return field_label(event.subject)
    return event.subject


def event_details(event: AuditEvent) -> str:
    """The rest of the event in a few words: permissions, role, community, where a key was seen."""
    data = event.data or {}
    parts = []
    if "scopes" in data:
        parts.append(summarize_scopes(data["scopes"]))
    if isinstance(data.get("restrictions"), dict):
        parts.append(Restrictions.from_json(data["restrictions"]).summary())
    if "role" in data and "before" not in data:
        parts.append(f"as {human_value('role', data['role']).lower()}")
    if data.get("community"):
        parts.append(f"community {data['community']}")
    if data.get("url"):
        parts.append(f"found at {data['url']}")
    if data.get("resent"):
        parts.append("sent again")
    if data.get("device"):
        parts.append(f"device {data['device']}")
    if data.get("networkCount"):  # key.new_networks: the networks past five in an hour
        count = data["networkCount"]
        parts.append(
            f"{count} more new network{'' if count == 1 else 's'} from {data.get('network')}; "
            "no more listed one by one for an hour"
        )
    elif data.get("network"):
        parts.append(f"network {data['network']}")
    parts += _service_account_details(data)
    return ", ".join(parts)


def _service_account_details(data: dict[str, Any]) -> list[str]:
    """Hand-overs, idle keys and grace ends in a few words (docs/product.md §12-13)."""
    parts = []
    if isinstance(data.get("fromKey"), dict) and isinstance(data.get("serviceAccount"), dict):
        from_key, account = data["fromKey"], data["serviceAccount"]
        parts.append(
            f"{from_key.get('holder')}'s key {from_key.get('hint')} handed over to the service "
            f"account {account.get('name')}; " + _old_secret_stops(data.get("oldSecretStopsAt"))
        )
    if data.get("reason") == "idle":
        parts.append("unused past the key policy's idle limit")
    if "idleDays" in data and "revokedAt" in data:
        parts.append(f"revoked on {_day_of(data['revokedAt'])} unless used")
    if data.get("reason") == "leaked" and "url" not in data:
        parts.append("its old secret was reported leaked")
    if "keysRevoked" in data:
        count = data["keysRevoked"]
        parts.append(f"{count} key{pluralize(count)} revoked")
    return parts


def _moment_of(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _old_secret_stops(value: Any) -> str:
    """When a hand-over's old secret stops, in the house's words (never a raw ISO time)."""
    moment = _moment_of(value)
    if moment is None:
        return "old secret stopped at once"
    return f"old secret works until {moment_text(moment)}"


def _day_of(value: Any) -> str:
    moment = _moment_of(value)
    if moment is None:
        day = _date_of(value)
        return day_text(day) if day else str(value)
    return day_text(moment)


def _date_of(value: Any) -> date | None:
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError:
        return None


@dataclass(frozen=True)
class AuditRow:
    """One event as the Audit page shows it: the event, and what it did in words."""

    event: AuditEvent
    change: dict[str, Any] | None
    subject_label: str
    details: str

    @classmethod
    def of(cls, event: AuditEvent) -> "AuditRow":
        return cls(event, event_change(event), event_subject(event), event_details(event))


CSV_COLUMNS = [
    "time",
    "time_utc",
    "action",
    "action_label",
    "actor",
    "ip",
    "key_id",
    "key_hint",
    "subject",
    "field",
    "before",
    "after",
    "permissions",
    "role",
    "community",
    "details",
]


def csv_row(event: AuditEvent, zone: ZoneInfo) -> list[str]:
    """An event as a row of the CSV export (CSV_COLUMNS), values as the page shows them; audit
    streams send the same fields."""
    data = event.data or {}
    change = event_change(event)
    return [
        moment_text(event.created_at, zone),  # as the page writes it
        event.created_at.astimezone(UTC).isoformat(),
        event.action,
        event.action_label,
        event.actor_label,
        event.ip or "",
        str(event.key_id or ""),
        event.key.hint if event.key else "",
        event_subject(event),
        change["label"] if change else "",
        change["before"] if change else "",
        change["after"] if change else "",
        summarize_scopes(data["scopes"]) if "scopes" in data else "",
        human_value("role", data["role"]) if "role" in data else "",
        data.get("community", ""),
        event_details(event),
    ]
