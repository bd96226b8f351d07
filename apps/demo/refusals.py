"""The last day's refusals of the keys, as the key pages count them (apps/metering/refusals.py,
in the cache by hour), put back from the request log: by the demo for its made-up requests,
and by a development server whose cache is its own memory (no REDIS_URL), which starts with
none of the counts that `manage.py demo` or an earlier server made."""

import sys
import threading
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.signals import request_started
from django.db import DatabaseError
from django.utils import timezone

from apps.metering.records import REFUSAL_STATUSES
from apps.metering.refusals import refusal_count
from apps.request_log.models import RequestLogEntry

LAST_DAY = timedelta(hours=24)
REPLAY = "demo-refusals-replay"
_replayed = threading.Lock()  # held for good by the one request that replays


def refusals_replay(key_ids: list[int] | None = None) -> int:
    """Count again each refused request of the last 24 hours in the log (of `key_ids`, or of
    every key); how many."""
    rows = RequestLogEntry.objects.filter(
        at__gte=timezone.now() - LAST_DAY, status__in=sorted(REFUSAL_STATUSES)
    )
    if key_ids is not None:
        rows = rows.filter(key_id__in=key_ids)
    replayed = 0
    for key_id, error in rows.values_list("key_id", "error").iterator(chunk_size=2000):
        refusal_count(key_id, error)
        replayed += 1
    return replayed


def _replay_once(sender: Any, **kwargs: Any) -> None:
    request_started.disconnect(dispatch_uid=REPLAY)
    if _replayed.acquire(blocking=False):  # the first of the threaded server's requests
        try:
            refusals_replay()
        except DatabaseError:  # not migrated yet: there is nothing to count, and no request fails
            pass


def replay_on_a_development_server() -> None:
    """On `manage.py runserver` with DEBUG and a cache in process memory, replay the counts
    before the first request: otherwise the demo's keys say "Refused: None" beside their
    refused requests in Logs."""
    backend = str(settings.CACHES["default"]["BACKEND"])
    if settings.DEBUG and sys.argv[1:2] == ["runserver"] and backend.endswith("LocMemCache"):
        request_started.connect(_replay_once, dispatch_uid=REPLAY)
