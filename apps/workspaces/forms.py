from collections import defaultdict
from typing import Any

from django import forms

from apps.common.validation import InvalidInput

from .choices import TRANSCRIPTION_LANGUAGES, video_qualities_for_plan
from .models import Workspace
from .validators import (
    clean_timezone,
    clean_transcription_language,
    clean_video_quality,
    clean_workspace_name,
    timezone_names,
)


def grouped_timezones() -> list[tuple[str, list[tuple[str, str]]]]:
    """Every IANA name, grouped by region for the select's optgroups (UTC and friends last)."""
    groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for name in sorted(timezone_names()):
        region = name.split("/", 1)[0] if "/" in name else "Other"
        groups[region].append((name, name.replace("_", " ")))
    return sorted(groups.items(), key=lambda item: (item[0] == "Other", item[0]))


class WorkspaceSettingsForm(forms.Form):
    """The Settings page. Each field goes through the same validator as PATCH /workspace."""

    name = forms.CharField(label="Workspace name", max_length=100)
    timezone = forms.ChoiceField(label="Scheduling timezone")
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
        min_value=7,
        max_value=365,
        help_text="7 to 365 days. Keys created from now on may not live longer; CLI keys last "
        "90 days, so a shorter limit turns CLI logins away.",
    )
    key_allow_no_expiry = forms.BooleanField(
        label="Offer “No expiry” for new API keys",
        required=False,
        help_text="Keys that never expire suit long-lived server integrations only.",
    )
    require_two_factor = forms.BooleanField(
        label="Require two-factor authentication for everyone in this workspace",
        required=False,
        help_text="Owners, admins and community members without an authenticator app or a "
        "passkey are asked to add one before they reach the workspace.",
    )

    def __init__(self, *args: Any, workspace: Workspace, user=None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.workspace = workspace
        self.user = user
        self.fields["timezone"].choices = grouped_timezones()
        self.fields["default_video_quality"].choices = video_qualities_for_plan(workspace.plan)

    def _shared(self, cleaner, field: str, *extra: Any) -> Any:
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
