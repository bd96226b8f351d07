"""An audit stream receiver inside the development server (DEBUG only), as /dev/webhooks/ is for
webhooks: point an HTTPS stream at /dev/audit-streams/receive (Settings → Audit streaming
offers it in development) and /dev/audit-streams/ lists each batch, newest first (the last 50,
in this process's memory): its events, one JSON document a line, and its signature checked
with the `standardwebhooks` library as a SIEM's receiver would."""

import json
import logging
from collections import deque
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from apps.webhooks.secrets import unseal

from .models import AuditStream

logger = logging.getLogger("apps.audit_streams")
_received: deque[dict[str, Any]] = deque(maxlen=50)
VALID = "signature valid"


def dev_stream_receiver_url(request: HttpRequest) -> str | None:
    """Where a development stream can point (None without DEBUG): this server's receiver."""
    if not settings.DEBUG:
        return None
    return request.build_absolute_uri(reverse("dev_audit_stream_receive"))


def _verdict(request: HttpRequest, headers: dict[str, str]) -> str:
    streams = AuditStream.objects.filter(
        url=request.build_absolute_uri(), kind=AuditStream.Kind.HTTPS
    )
    if not streams:
        return "no audit stream with this URL"
    for stream in streams:  # several development streams may point here
        try:
            Webhook(unseal(stream.secret_encrypted)).verify(request.body, headers, json_parse=False)
        except (WebhookVerificationError, ValueError):
            continue
        return VALID
    return "signature NOT valid"


def _events(body: bytes) -> tuple[list[dict[str, Any]], str]:
    """The batch's events, one JSON document a line; and what is wrong with it, if anything."""
    events = []
    for number, line in enumerate(body.decode("utf-8", "replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except ValueError:
            return events, f"line {number} is not JSON"
    return events, ""


@csrf_exempt
def dev_stream_receive(request: HttpRequest) -> HttpResponse:
    if not settings.DEBUG or request.method != "POST":
        raise Http404("The development receiver exists only with DEBUG on.")
    headers = {k.lower(): v for k, v in request.headers.items()}
    verdict = _verdict(request, headers)
    events, problem = _events(request.body)
    _received.appendleft(
        {
            "at": timezone.now(),
            "id": headers.get("webhook-id", ""),
            "verdict": verdict,
            "problem": problem,
            "events": [
                {"action": e.get("action", "?"), "id": e.get("id", ""), "body": json.dumps(e)}
                for e in events
                if isinstance(e, dict)
            ],
        }
    )
    logger.info(
        "Development stream receiver: batch %s, %d events, %s",
        headers.get("webhook-id"),
        len(events),
        verdict,
    )
    return HttpResponse(status=204 if verdict == VALID and not problem else 400)


def dev_audit_streams(request: HttpRequest) -> HttpResponse:
    if not settings.DEBUG:
        raise Http404("The development receiver exists only with DEBUG on.")
    return render(request, "audit_streams/dev_received.html", {"received": list(_received)})
