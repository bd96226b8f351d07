"""What a process keeps between requests outside the database, forgotten at once: before and
after every test (tests/conftest.py), and before every example of a state machine, which runs
many in one test and must replay each the same way (Hypothesis)."""

from django.core.cache import cache

from apps.api.refusal_log import refusal_lines
from apps.api_keys.auth import blocked_addresses
from apps.metering.limits import rate_limit_reset
from apps.metering.requests import metering_reset


def process_state_reset() -> None:
    """Forget the cache, the rate-limit buckets, the blocked addresses, the refusal log's
    lines and the usage gathered for the next flush."""
    cache.clear()
    rate_limit_reset()
    blocked_addresses.clear()
    refusal_lines.clear()
    metering_reset()
