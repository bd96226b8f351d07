"""Links to a key's pages, for the e-mails that speak of it."""

from django.urls import reverse

from .models import ApiKey


def key_links(key: ApiKey, base_url: str) -> dict[str, str]:
    """Where a key's page and its "re-create" form (prefilled from it) are, for e-mails."""
    member = key.kind == ApiKey.Kind.MEMBER
    page = "portal:key_detail" if member else "key_pages:detail"
    create = "portal:key_create" if member else "key_pages:create"
    return {
        "page": base_url + reverse(page, args=[key.pk]),
        "recreate": base_url + reverse(create) + f"?from={key.pk}",
    }
