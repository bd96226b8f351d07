"""Closed lists of values for workspace settings, kept in one place."""

from django.db import models

# ISO 639-1 codes offered for transcription. Order is the order shown in the dashboard.
TRANSCRIPTION_LANGUAGES: dict[str, str] = {
    "en": "English",
    "de": "German",
    "fr": "French",
    "es": "Spanish",
    "it": "Italian",
    "pt": "Portuguese",
    "nl": "Dutch",
    "pl": "Polish",
    "sv": "Swedish",
    "da": "Danish",
    "fi": "Finnish",
    "no": "Norwegian",
    "cs": "Czech",
    "el": "Greek",
    "hu": "Hungarian",
    "ro": "Romanian",
    "ja": "Japanese",
    "ko": "Korean",
    "zh": "Chinese",
    "ar": "Arabic",
    "he": "Hebrew",
    "hi": "Hindi",
    "id": "Indonesian",
    "ru": "Russian",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "vi": "Vietnamese",
}


class VideoQuality(models.TextChoices):
    P480 = "480p", "480p"
    P720 = "720p", "720p (HD)"
    P1080 = "1080p", "1080p (Full HD)"
    P2160 = "2160p", "2160p (4K)"


class Plan(models.TextChoices):
    STARTER = "starter", "Starter"
    PRO = "pro", "Pro"
    BUSINESS = "business", "Business"


# The highest default video quality each plan allows.
PLAN_MAX_VIDEO_QUALITY: dict[str, str] = {
    Plan.STARTER: VideoQuality.P720,
    Plan.PRO: VideoQuality.P1080,
    Plan.BUSINESS: VideoQuality.P2160,
}


def video_qualities_for_plan(plan: str) -> list[tuple[str, str]]:
    """The video quality choices a plan allows, lowest first."""
    allowed: list[tuple[str, str]] = []
    for value, label in VideoQuality.choices:
        allowed.append((value, label))
        if value == PLAN_MAX_VIDEO_QUALITY[plan]:
            break
    return allowed


class KeyApproval(models.TextChoices):
    """Which new keys wait for an owner's approval (docs/product.md §10)."""

    OFF = "off", "No key waits"
    WRITE = "write", "Keys that can change things wait"
    ALL = "all", "Every key waits"
