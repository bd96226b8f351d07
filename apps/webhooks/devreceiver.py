"""A webhook receiver inside the development server (DEBUG only), so the README's run command
shows deliveries end to end: the demo workspace's endpoint points here. Each delivery is checked
with the `standardwebhooks` library, as a customer's receiver would, and listed at
/dev/webhooks/ (newest first, the last 50, in this process's memory)."""

import json
import logging
from collections import deque
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from .models import WebhookEndpoint
from .secrets import unseal

logger = logging.getLogger("apps.webhooks")
_received: deque[dict[str, Any]] = deque(maxlen=50)


@csrf_exempt
def dev_receive(request: HttpRequest) -> HttpResponse:
    if not settings.DEBUG or request.method != "POST":
        raise Http404("The development receiver exists only with DEBUG on.")
    endpoint = WebhookEndpoint.objects.filter(url=request.build_absolute_uri()).first()
    headers = {k.lower(): v for k, v in request.headers.items()}
    verdict = "no endpoint with this URL"
    if endpoint is not None:
        secrets = [unseal(endpoint.secret_encrypted)]
        if endpoint.previous_secret_encrypted:
            secrets.append(unseal(endpoint.previous_secret_encrypted))
        verdict = "signature NOT valid"
        for secret in secrets:
            try:
                Webhook(secret).verify(request.body, headers)
            except WebhookVerificationError:
                continue
            verdict = "signature valid"
            break
    try:
        payload = json.loads(request.body or b"{}")
    except ValueError:
        # An audit stream's batch (JSON lines) has a receiver of its own: /dev/audit-streams/.
        payload, verdict = {}, "not one JSON document (an audit stream? /dev/audit-streams/)"
    if not isinstance(payload, dict):
        payload = {"body": payload}
    _received.appendleft(
        {
            "at": timezone.now(),
            "id": headers.get("webhook-id", ""),
            "type": payload.get("type", "?"),
            "verdict": verdict,
            "body": json.dumps(payload, indent=2),
        }
    )
    logger.info(
        "Development receiver: %s %s, %s", payload.get("type"), headers.get("webhook-id"), verdict
    )
    return HttpResponse(status=204 if verdict == "signature valid" else 400)


def dev_webhooks(request: HttpRequest) -> HttpResponse:
    if not settings.DEBUG:
        raise Http404("The development receiver exists only with DEBUG on.")
    return render(request, "webhooks/dev_received.html", {"received": list(_received)})
