"""The key's page draws its quota's period against the allowance (docs/product.md §17): the
requests counted so far, added up, under a line at the allowance; a shared quota counts every
key of its service account."""

import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine

from apps.audit.services import Actor
from apps.common.quota_periods import Quota
from apps.service_accounts.services import service_account_create, service_account_update
from apps.usage.models import KeyUsageHour
from tests.factories import make_key

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 11, 10, 15, 30, tzinfo=UTC)


def used(key, hours_ago: int, count: int, outcome: str = "2xx", operation: str = "x") -> None:
    hour = (NOW - timedelta(hours=hours_ago)).replace(minute=0, second=0, microsecond=0)
    KeyUsageHour.objects.create(
        key=key, hour=hour, operation=operation, outcome=outcome, count=count
    )


def numbers(page: str) -> list[tuple[str, str, str]]:
    table = page.split('data-testid="quota-chart"')[1].split("</table>")[0]
    return re.findall(r'<th scope="row">([^<]+)</th><td>([\d,]+)</td><td>([\d,]+)</td>', table)


@time_machine.travel(NOW, tick=False)
def test_a_weekly_quota_is_drawn_day_by_day_against_its_allowance(client, owner, workspace):
    made = make_key(user=owner, workspace=workspace, scopes=["pages:read"], name="Shop")
    made.key.created_at = NOW - timedelta(days=9)  # its week began 2 days ago
    made.key.quota_requests, made.key.quota_period = 100, "week"
    made.key.save()
    used(made.key, 50, 30)  # before this week: not counted
    used(made.key, 30, 20)
    used(made.key, 5, 25)
    used(made.key, 5, 9, outcome="429")  # refused: not counted
    used(made.key, 4, 3, operation="mcp:tools/list")  # MCP's own method: never counted
    page = client.get(f"/integrations/api/keys/{made.key.pk}/").content.decode()
    assert "This period against its allowance of 100" in page
    assert "45 counted so far, by day" in page
    # The week's days from its start (Nov 8, 15:30), each named by the day it starts.
    assert numbers(page) == [("Nov 8", "20", "20"), ("Nov 9", "25", "45")]
    assert 'data-testid="quota-allowance"' in page


@time_machine.travel(NOW, tick=False)
def test_a_daily_quota_is_drawn_hour_by_hour_and_the_line_sits_at_the_allowance(
    client, owner, workspace
):
    made = make_key(user=owner, workspace=workspace, scopes=["pages:read"])
    made.key.created_at = NOW - timedelta(days=3, hours=3)
    made.key.quota_requests, made.key.quota_period = 10, "day"
    made.key.save()
    used(made.key, 2, 5)
    used(made.key, 0, 15)  # past the allowance: a top-up let it
    page = client.get(f"/integrations/api/keys/{made.key.pk}/").content.decode()
    # The day's hours from its start (12:30): the hour row of 15:00 is in the one from 14:30.
    assert numbers(page) == [("12:30", "5", "5"), ("14:30", "15", "20")]
    line = re.search(r'class="chart-allowance"[^>]* y1="([\d.]+)"', page)
    # 20 counted is the chart's top, the allowance of 10 halfway up (baseline 140, top 8).
    assert line is not None and float(line.group(1)) == 74.0


@time_machine.travel(NOW, tick=False)
def test_a_shared_quota_draws_every_key_of_its_service_account(client, owner, workspace):
    actor = Actor.of_user(owner)
    account = service_account_create(workspace=workspace, name="Sync", actor=actor)
    first = make_key(user=account.user, workspace=workspace, scopes=["pages:read"])
    second = make_key(user=account.user, workspace=workspace, scopes=["pages:read"])
    service_account_update(
        account=account, changes={"quotaShared": {"requests": 50, "period": "month"}}, actor=actor
    )
    used(first.key, 0, 4)
    used(second.key, 0, 6)
    page = client.get(f"/integrations/api/keys/{first.key.pk}/").content.decode()
    assert "10 counted so far" in page and first.key.user.date_joined <= NOW


def test_a_key_without_a_quota_has_no_quota_chart(client, owner, workspace):
    made = make_key(user=owner, workspace=workspace, scopes=["pages:read"])
    page = client.get(f"/integrations/api/keys/{made.key.pk}/").content.decode()
    assert 'data-testid="quota-chart"' not in page and Quota(1, "day")
