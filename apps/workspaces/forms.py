import functools
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, cast
from zoneinfo import ZoneInfo

from django import forms
from django.utils import timezone

from apps.common.quota_periods import quota_from_text
from apps.common.validation import InvalidInput

from .choices import (
    TRANSCRIPTION_LANGUAGES,
    KeyApproval,
    Plan,
    VideoQuality,
    video_qualities_for_plan,
)
from .models import Workspace
from .timezone_search import timezone_keywords
from .validators import (
    IDLE_DAYS_MAX,
    IDLE_DAYS_MIN,
    canonical_timezones,
    clean_idle_days,
    clean_timezone,
    clean_transcription_language,
    clean_video_quality,
    clean_workspace_name,
    timezone_names,
)

QUARTER_HOUR = 900  # seconds


def utc_offset(name: str, at: datetime | None = None) -> str:
    """The zone's offset from UTC now, e.g. "UTC+01:00" (or "UTC" itself)."""
    offset = (at or timezone.now()).astimezone(ZoneInfo(name)).utcoffset() or timedelta(0)
    minutes = int(offset.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "−"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


Groups = list[tuple[str, list[tuple[str, str]]]]


@functools.lru_cache(maxsize=2)
def _groups_in(slot: int) -> Groups:
    """The canonical zones' groups with their offsets during the quarter hour `slot` (every
    change of a zone's offset falls on a quarter hour of UTC): read once, not for each page."""
    at = datetime.fromtimestamp(slot * QUARTER_HOUR, UTC)
    groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for name in canonical_timezones():
        region, _, place = name.partition("/")
        if not place:
            region, place = "Other", name
        groups[region].append(
            (name, f"{place.replace('_', ' ').replace('/', ' – ')} ({utc_offset(name, at)})")
        )
    return sorted(groups.items(), key=lambda item: (item[0] == "Other", item[0]))


def grouped_timezones(current: str = "") -> Groups:
    """The canonical zones grouped by region for the select's optgroups, each labelled with its
    city and current UTC offset ("Berlin (UTC+01:00)"). A legacy name the workspace already
    uses is kept, in its own group, so saving the page never changes it by accident."""
    ordered = list(_groups_in(int(timezone.now().timestamp()) // QUARTER_HOUR))
    if current and current not in canonical_timezones():
        ordered.insert(0, ("Current setting", [(current, f"{current} ({utc_offset(current)})")]))
    return ordered


def timezone_option_groups(current: str) -> list[dict[str, Any]]:
    """The picker's optgroups with each option's search words (cities, aliases, countries,
    abbreviations), for a select rendered by hand."""
    keywords = timezone_keywords()
    return [
        {
            "label": region,
            "options": [
                {
                    "value": value,
                    "label": label,
                    "keywords": keywords.get(value, ""),
                    "selected": value == current,
                }
                for value, label in options
            ],
        }
        for region, options in grouped_timezones(current)
    ]


class WorkspaceSettingsForm(forms.Form):
    """The Settings page. Each field goes through the same validator as PATCH /workspace."""

    name = forms.CharField(label="Workspace name", max_length=100)
    timezone = forms.ChoiceField(label="Scheduling time zone")
    auto_transcribe_uploads = forms.BooleanField(
        label="Transcribe uploads automatically", required=False
    )
    transcription_language = forms.ChoiceField(
        label="Transcription language",
        choices=[(code, f"{name} ({code})") for code, name in TRANSCRIPTION_LANGUAGES.items()],
    )
    default_video_quality = forms.ChoiceField(label="Default video quality")
    key_max_lifetime_days = forms.IntegerField(
        label="Longest lifetime of a new API key (days)",
        min_value=1,
        max_value=365,
        help_text="1 to 365 days. Keys created from now on may not live longer; CLI keys last "
        "90 days, so a shorter limit turns CLI logins away.",
    )
    key_allow_no_expiry = forms.BooleanField(
        label="Offer “No expiry” for new API keys",
        required=False,
        help_text="Keys that never expire suit long-lived server integrations only.",
    )
    key_approval = forms.ChoiceField(
        label="Keys that wait for an owner's approval",
        choices=[
            (KeyApproval.OFF, "None: every key works at once"),
            (
                KeyApproval.WRITE,
                "Keys of admins and members that can change things (any Write, or API keys)",
            ),
            (KeyApproval.ALL, "Every key of admins and members"),
        ],
        help_text="A waiting key gets its secret at once but answers 401 pending-key until an "
        "owner approves it under Approvals; unanswered for 7 days, it is denied. Owners' own "
        "keys never wait. The CLI login and connected apps are offered only what needs no "
        "approval.",
    )
    key_idle_days = forms.IntegerField(
        label="Revoke keys unused for (days)",
        required=False,
        min_value=IDLE_DAYS_MIN,
        max_value=IDLE_DAYS_MAX,
        help_text="Empty: never. 30 to 365 days: a key not used for that long (or never used "
        "since its creation) is revoked, its holder warned 7 days before; a service account's "
        "keys warn the owners.",
    )
    member_quota = forms.CharField(
        label="Quota of every new member key",
        required=False,
        help_text="Empty: none. Requests per period, e.g. 1000/month (day, week, month, or "
        "never for a one-off allowance): each new member key gets it and may ask for less, "
        "never more; an owner can give one key another.",
        widget=forms.TextInput(attrs={"placeholder": "e.g. 1000/month", "autocomplete": "off"}),
    )
    require_two_factor = forms.BooleanField(
        label="Require two-factor authentication for everyone in this workspace",
        required=False,
        help_text="Owners, admins and community members without an authenticator app or a "
        "passkey are asked to add one before they reach the workspace.",
    )

    def __init__(self, *args: Any, workspace: Workspace, user: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.workspace = workspace
        self.user = user
        cast(forms.ChoiceField, self.fields["timezone"]).choices = grouped_timezones(
            workspace.timezone
        )
        cast(
            forms.ChoiceField, self.fields["default_video_quality"]
        ).choices = video_qualities_for_plan(workspace.plan)
        if isinstance(quota := self.initial.get("member_quota"), dict):  # as people write it
            self.initial["member_quota"] = f"{quota['requests']}/{quota['period']}"

    def timezone_groups(self) -> list[dict[str, Any]]:
        """The time-zone picker's groups, the chosen zone (or the stored one) selected."""
        chosen = str(self["timezone"].value() or "")
        if chosen not in timezone_names():  # a refused value: show the stored one
            chosen = self.workspace.timezone
        return timezone_option_groups(chosen)

    def video_quality_options(self) -> list[dict[str, Any]]:
        """Every quality, those above the plan disabled and named with the plan that unlocks
        them."""
        allowed = {value for value, _ in video_qualities_for_plan(self.workspace.plan)}
        current = self["default_video_quality"].value()
        options = []
        for value, label in VideoQuality.choices:
            unlocking = next(
                plan_label
                for plan, plan_label in Plan.choices
                if value in {v for v, _ in video_qualities_for_plan(plan)}
            )
            options.append(
                {
                    "value": value,
                    "label": label if value in allowed else f"{label}, with the {unlocking} plan",
                    "disabled": value not in allowed,
                    "selected": value == current,
                }
            )
        return options

    def _shared(self, cleaner: Callable[..., Any], field: str, *extra: Any) -> Any:
        try:
            return cleaner(self.cleaned_data[field], *extra)
        except InvalidInput as error:
            raise forms.ValidationError(error.message) from None

    def clean_name(self) -> str:
        return self._shared(clean_workspace_name, "name", "Workspace name")

    def clean_timezone(self) -> str:
        return self._shared(clean_timezone, "timezone", "Timezone")

    def clean_transcription_language(self) -> str:
        return self._shared(clean_transcription_language, "transcription_language", "Language")

    def clean_default_video_quality(self) -> str:
        return self._shared(clean_video_quality, "default_video_quality", self.workspace.plan)

    def clean_member_quota(self) -> dict[str, Any] | None:
        quota = self._shared(quota_from_text, "member_quota", "member_quota")
        return quota.as_json() if quota else None

    def clean_key_idle_days(self) -> int | None:
        return clean_idle_days(self.cleaned_data.get("key_idle_days"), "key_idle_days")

    def clean_require_two_factor(self) -> bool:
        required = self.cleaned_data["require_two_factor"]
        if required and not self.workspace.require_two_factor and self.user is not None:
            from allauth.mfa.utils import is_mfa_enabled

            if not is_mfa_enabled(self.user):
                raise forms.ValidationError(
                    "Add two-factor authentication to your own account first (Account → "
                    "Two-factor authentication), so the requirement cannot lock you out."
                )
        return required

    def changes(self) -> dict[str, Any]:
        """The model fields whose values differ from the workspace's."""
        return {
            field: value
            for field, value in self.cleaned_data.items()
            if getattr(self.workspace, field) != value
        }
