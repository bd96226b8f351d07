import re
from typing import Any

from django.db import IntegrityError, transaction

from apps.common.validation import InvalidInput, clean_long_text, clean_text
from apps.workspaces.models import Workspace

from .models import Page

SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
BODY_MAX_LENGTH = 10_000  # ordinary text stays well under the API's 64 KiB body limit


def clean_slug(value: Any, field: str = "slug") -> str:
    if not isinstance(value, str) or not SLUG.fullmatch(value) or len(value) > 100:
        raise InvalidInput(
            field, f"{field} must be 1 to 100 lower-case letters, digits and single hyphens."
        )
    return value


def page_create(*, workspace: Workspace, title: Any, slug: Any, body: Any) -> Page:
    """Create a page; a slug already used in the workspace is refused as invalid input."""
    title = clean_text(title, "title", max_length=200)
    slug = clean_slug(slug)
    body = clean_long_text(body, "body", max_length=BODY_MAX_LENGTH, required=False)
    try:
        with transaction.atomic():
            return Page.objects.create(workspace=workspace, title=title, slug=slug, body=body)
    except IntegrityError:
        raise InvalidInput("slug", f"slug {slug!r} is already used by another page.") from None
