"""Audit streaming's one setting (docs/operations.md, "Audit streaming")."""

from django.core.exceptions import ImproperlyConfigured

from .env import env_int

# How long a stream that is down or paused keeps its backlog, and how long one may fail before
# it is disabled and its owners e-mailed.
AUDIT_STREAM_DAYS = env_int("AUDIT_STREAM_DAYS", 7)
if not 1 <= AUDIT_STREAM_DAYS <= 30:
    raise ImproperlyConfigured(f"AUDIT_STREAM_DAYS must be from 1 to 30, not {AUDIT_STREAM_DAYS}.")
