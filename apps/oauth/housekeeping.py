"""The daily clean-up of the authorization server's tables (the `oauth-prune` job)."""

from datetime import timedelta

from django.db.models import Q
from django.utils import timezone

from .models import AuthorizationCode, OAuthClient, RefreshToken

UNUSED_REGISTRATION_KEPT = timedelta(days=30)
ENDED_TOKENS_KEPT = timedelta(days=7)


def oauth_prune() -> dict[str, int]:
    """Delete registrations never used in 30 days (no grant), stale metadata documents
    without grants, expired codes, and refresh tokens used or expired a week ago."""
    now = timezone.now()
    old = now - UNUSED_REGISTRATION_KEPT
    clients, _ = (
        OAuthClient.objects.filter(grants__isnull=True)
        .filter(
            Q(source=OAuthClient.Source.REGISTERED, created_at__lt=old)
            | Q(source=OAuthClient.Source.DOCUMENT, fetched_until__lt=old)
        )
        .delete()
    )
    codes, _ = AuthorizationCode.objects.filter(expires_at__lt=now).delete()
    ended = now - ENDED_TOKENS_KEPT
    tokens, _ = RefreshToken.objects.filter(Q(used_at__lt=ended) | Q(expires_at__lt=ended)).delete()
    return {"clients": clients, "codes": codes, "refresh_tokens": tokens}
