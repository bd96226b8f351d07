"""`{% key_usage key %}`: a key's charts, for its page in the dashboard and the member portal
(the key pages live below this app, so they reach it through the template only)."""

from typing import Any

from django import template
from django.utils import timezone

from apps.quotas.counting import holder_of

from ..charts import daily_chart, hourly_chart
from ..models import KeyNetwork, KeyUsageHour
from ..quota_chart import quota_chart

register = template.Library()


@register.inclusion_tag("usage/_key_usage.html")
def key_usage(key: Any) -> dict[str, Any]:
    now = timezone.now()
    use = getattr(key, "quota_use", None)  # attached by the key's page
    holder = holder_of(key) if use is not None else None
    return {
        "quota": quota_chart(holder, use, now) if holder is not None and use is not None else None,
        "daily": daily_chart(today=now.date(), title="Requests a day, last 30 days", key=key),
        "hourly": hourly_chart(
            KeyUsageHour.objects.filter(key=key), now=now, title="Requests an hour, last 24 hours"
        ),
        "networks": KeyNetwork.objects.filter(key=key).order_by("-last_seen")[:10],
    }
