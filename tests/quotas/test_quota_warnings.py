"""A quota told of at 80 % and at 100 %, once per period each: the holder's e-mail (the owners'
for a service account), the audit events the webhooks and streams carry."""

import pytest
from django.core import mail

from apps.audit.models import AuditEvent
from apps.common.quota_periods import Quota
from apps.webhooks.events import AUDITED
from tests.conftest import run_tasks
from tests.factories import make_key, owner_of

from .test_quota_api import call

pytestmark = pytest.mark.django_db(transaction=True)


def told() -> list[str]:
    return list(
        AuditEvent.objects.filter(action__startswith="key.quota_")
        .order_by("pk")
        .values_list("action", flat=True)
    )


def run_to_the_end(live_server, secret: str) -> list[int]:
    return [call(live_server, secret).status_code for _ in range(6)]


def test_at_80_and_100_percent_the_holder_is_told_once_each_counted_in_postgresql(live_server):
    owner = owner_of(email="holder@example.com")
    made = make_key(user=owner, scopes=["pages:read"], quota=Quota(10, "day"), name="Shop")
    assert [call(live_server, made.secret).status_code for _ in range(7)] == [200] * 7
    assert told() == []  # 70 %
    assert [call(live_server, made.secret).status_code for _ in range(2)] == [200] * 2
    assert told() == ["key.quota_warning"]  # 80 % and 90 %: told once
    assert run_to_the_end(live_server, made.secret) == [200, 429, 429, 429, 429, 429]
    assert told() == ["key.quota_warning", "key.quota_exhausted"]
    run_tasks()
    subjects = [m.subject for m in mail.outbox if m.to == ["holder@example.com"]]
    assert subjects == [
        "Your API key “Shop” has used 80 % of its quota",
        "Your API key “Shop” has used its whole quota",
    ]
    exhausted = AuditEvent.objects.get(action="key.quota_exhausted")
    assert exhausted.data["used"] == 10 and exhausted.data["left"] == 0
    assert AUDITED["key.quota_warning"] == "key.quota_warning"
    assert AUDITED["key.quota_exhausted"] == "key.quota_exhausted"


def test_with_redis_the_copy_after_each_flush_tells_of_the_quota(live_server, with_redis):
    owner = owner_of(email="holder@example.com")
    made = make_key(user=owner, scopes=["pages:read"], quota=Quota(5, "week"), name="Shop")
    assert run_to_the_end(live_server, made.secret) == [200] * 5 + [429]
    assert told() == ["key.quota_warning", "key.quota_exhausted"]
    run_tasks()
    assert len([m for m in mail.outbox if "quota" in m.subject]) == 2
