"""Workspace settings validation, shared by PATCH /workspace and the dashboard's Settings form."""

from collections.abc import Callable
from difflib import get_close_matches
from functools import cache
from importlib import resources
from typing import Any

from apps.common.validation import InvalidInput, clean_bool, clean_text

from .choices import TRANSCRIPTION_LANGUAGES, video_qualities_for_plan


@cache
def timezone_names() -> frozenset[str]:
    """Every IANA time zone name, as zoneinfo spells it, from the pinned tzdata package.

    Read from the package rather than the operating system so every server (and the OpenAPI
    document) accepts exactly the same names.
    """
    zones = resources.files("tzdata").joinpath("zones").read_text().split()
    return frozenset(zones) - {"Factory", "localtime"}


@cache
def canonical_timezones() -> tuple[str, ...]:
    """The canonical zones (tzdata's zone1970.tab, one per region whose clocks have agreed
    since 1970) plus UTC: what the Settings picker offers. Legacy aliases stay valid."""
    table = resources.files("tzdata").joinpath("zoneinfo", "zone1970.tab").read_text()
    names = {
        line.split("\t")[2]
        for line in table.splitlines()
        if line and not line.startswith("#") and len(line.split("\t")) > 2
    }
    return tuple(sorted(names | {"UTC"}))


def clean_workspace_name(value: Any, field: str = "workspaceName") -> str:
    return clean_text(value, field, max_length=100)


def clean_timezone(value: Any, field: str = "timezone") -> str:
    if not isinstance(value, str):
        raise InvalidInput(field, f"{field} must be a string.")
    if value not in timezone_names():
        raise InvalidInput(field, f"{field} must be an IANA time zone name{_close_zones(value)}")
    return value


def _close_zones(value: str) -> str:
    """The end of the refusal: the names closest to a mistyped one, or an example."""
    names = timezone_names()
    by_city = {name.rsplit("/", 1)[-1].lower(): name for name in names}
    typed = value.strip().replace(" ", "_")
    close = [by_city[city] for city in get_close_matches(typed.lower(), by_city, n=3, cutoff=0.75)]
    close += [n for n in get_close_matches(typed, names, n=3, cutoff=0.75) if n not in close]
    if not close:
        return " such as Europe/Berlin."
    return "; did you mean " + " or ".join(close[:3]) + "?"


def clean_transcription_language(value: Any, field: str = "transcriptionLanguage") -> str:
    if not isinstance(value, str):
        raise InvalidInput(field, f"{field} must be a string.")
    if value not in TRANSCRIPTION_LANGUAGES:
        codes = ", ".join(TRANSCRIPTION_LANGUAGES)
        raise InvalidInput(field, f"{field} must be one of the supported language codes: {codes}.")
    return value


# PATCH field name -> (model field, cleaner). The record's own names are the body's names.
SETTABLE_FIELDS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "workspaceName": ("name", clean_workspace_name),
    "timezone": ("timezone", clean_timezone),
    "autoTranscribeUploads": (
        "auto_transcribe_uploads",
        lambda value: clean_bool(value, "autoTranscribeUploads"),
    ),
    "transcriptionLanguage": ("transcription_language", clean_transcription_language),
}
READ_ONLY_FIELDS = ("workspaceId", "userEmail", "scopes")


def validate_workspace_patch(data: Any) -> dict[str, Any]:
    """Check a PATCH /workspace body as a whole and return the model fields to write.

    Raises InvalidInput for the first problem found; nothing is returned unless every field is
    valid, which is what makes the PATCH all-or-nothing.
    """
    if not isinstance(data, dict):
        raise InvalidInput("body", "The request body must be a JSON object.")
    if not data:
        raise InvalidInput("body", "The request body must contain at least one field.")
    if "videoSettings" in data:
        raise InvalidInput(
            "videoSettings",
            "videoSettings cannot be changed through the API: the default video quality can be "
            "changed only in the dashboard.",
        )
    for name in data:
        if name in READ_ONLY_FIELDS:
            raise InvalidInput(name, f"{name} is read-only and cannot be changed.")
    for name in data:
        if name not in SETTABLE_FIELDS:
            settable = ", ".join(SETTABLE_FIELDS)
            raise InvalidInput(
                name, f"{name} is not a known field; settable fields are {settable}."
            )
    changes: dict[str, Any] = {}
    for name, (model_field, cleaner) in SETTABLE_FIELDS.items():
        if name in data:
            changes[model_field] = cleaner(data[name])
    return changes


def clean_video_quality(value: Any, plan: str, field: str = "Default video quality") -> str:
    """A default video quality the workspace's plan allows (a dashboard-only setting)."""
    allowed = [quality for quality, _ in video_qualities_for_plan(plan)]
    if value not in allowed:
        raise InvalidInput(field, f"Your plan allows a default video quality up to {allowed[-1]}.")
    return value


IDLE_DAYS_MIN, IDLE_DAYS_MAX = 30, 365


def clean_idle_days(value: Any, field: str = "idleDays") -> int | None:
    """The key policy's idle limit: null (off) or a whole number of days from 30 to 365."""
    if value is None:
        return None
    # JSON Schema's integer includes 30.0 (the OpenAPI fuzzer sends it as valid): taken as the
    # integer 30, as maxLifetimeDays is; 30.5 is refused.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(field, f"{field} must be a whole number of days or null.")
    if not IDLE_DAYS_MIN <= value <= IDLE_DAYS_MAX:
        raise InvalidInput(
            field, f"{field} must be from {IDLE_DAYS_MIN} to {IDLE_DAYS_MAX} days, or null (off)."
        )
    return value
