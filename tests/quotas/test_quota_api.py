"""A key's quota through the HTTP API against a live server (docs/product.md §17): counted in
PostgreSQL here (no Redis); tests/quotas/test_quota_redis.py counts it in Redis."""

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from apps.api.scopes import EVERY_SCOPE
from apps.audit.models import AuditEvent
from apps.common.quota_periods import Quota
from tests.factories import make_key, owner_of
from tests.key_operations.test_keys_api import call as keys_api_call

pytestmark = pytest.mark.django_db(transaction=True)


def call(live_server, secret: str, method: str = "GET", path: str = "/workspace", body=None):
    """tests/api_keys' call, GET /workspace unless told otherwise."""
    return keys_api_call(live_server, secret, method, path, body)


@pytest.fixture
def owner():
    return owner_of(email="owner@example.com")


@pytest.fixture
def manager(owner):
    return make_key(user=owner, scopes=EVERY_SCOPE, name="Manager")


def test_a_key_created_with_a_quota_says_so_in_its_record(live_server, manager):
    body = {
        "name": "Metered",
        "scopes": ["pages:read"],
        "quota": {"requests": 10000, "period": "month"},
    }
    made = call(live_server, manager.secret, "POST", "/keys", body)
    assert made.status_code == 201, made.text
    assert made.json()["quota"] == {"requests": 10000, "period": "month"}
    shown = call(live_server, manager.secret, "GET", f"/keys/{made.json()['id']}").json()
    assert shown["quotaUse"]["used"] == 0 and shown["quotaUse"]["left"] == 10000
    assert shown["quotaUse"]["refillsAt"] is not None
    assert call(live_server, manager.secret, "GET", "/keys").json()["data"][0]["quota"] == {
        "requests": 10000,
        "period": "month",
    }


def test_a_quota_of_three_serves_three_then_refuses_with_retry_after_until_the_refill(
    live_server, owner
):
    key = make_key(user=owner, scopes=["pages:read"], quota=Quota(3, "day")).secret
    answers = [call(live_server, key) for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert '"quota";q=3;w=86400' in answers[0].headers["RateLimit-Policy"]
    assert '"quota";r=0;' in answers[2].headers["RateLimit"]
    refused = call(live_server, key)
    assert refused.status_code == 429
    assert refused.json()["error"] == "quota-exceeded"
    assert "3 requests a day is spent; it refills at" in refused.json()["message"]
    assert 86_000 <= int(refused.headers["Retry-After"]) <= 86_400


def test_refused_requests_do_not_count_against_the_quota(live_server, owner):
    key = make_key(user=owner, scopes=["pages:read"], quota=Quota(2, "day")).secret
    for _ in range(5):  # 403: the key holds no keys:read
        assert call(live_server, key, "GET", "/keys").status_code == 403
    assert [call(live_server, key).status_code for _ in range(3)] == [200, 200, 429]


def test_the_quota_refills_to_its_allowance_at_the_period_boundary(live_server, owner):
    key = make_key(user=owner, scopes=["pages:read"], quota=Quota(2, "day")).secret
    assert [call(live_server, key).status_code for _ in range(3)] == [200, 200, 429]
    with time_machine.travel(timezone.now() + timedelta(days=1, seconds=5), tick=True):
        assert [call(live_server, key).status_code for _ in range(3)] == [200, 200, 429]


def test_an_owner_tops_up_a_one_off_allowance_and_gets_exactly_that_many_more(
    live_server, owner, manager
):
    made = make_key(user=owner, scopes=["pages:read"], quota=Quota(2, "never"))
    assert [call(live_server, made.secret).status_code for _ in range(3)] == [200, 200, 429]
    spent = call(live_server, made.secret)
    assert "Retry-After" not in spent.headers  # a one-off allowance never refills
    topped = call(live_server, manager.secret, "POST", f"/keys/{made.key.pk}/quota", {"add": 3})
    assert topped.status_code == 200, topped.text
    assert topped.json()["left"] == 3
    statuses = [call(live_server, made.secret).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    event = AuditEvent.objects.get(action="key.quota_changed")
    assert event.data == {"before": 0, "after": 3, "add": 3}


def test_setting_what_is_left_and_the_refusals_of_a_change(live_server, owner, manager):
    made = make_key(user=owner, scopes=["pages:read"], quota=Quota(5, "week"))
    path = f"/keys/{made.key.pk}/quota"
    assert call(live_server, manager.secret, "POST", path, {"set": 1}).json()["left"] == 1
    assert [call(live_server, made.secret).status_code for _ in range(2)] == [200, 429]
    both = call(live_server, manager.secret, "POST", path, {"add": 1, "set": 1})
    assert both.status_code == 400
    plain = make_key(user=owner, scopes=["pages:read"]).key
    none = call(live_server, manager.secret, "POST", f"/keys/{plain.pk}/quota", {"add": 1})
    assert none.status_code == 409 and none.json()["error"] == "conflict"


def test_a_key_with_a_quota_mints_no_key_with_more(live_server, owner):
    limited = make_key(user=owner, scopes=EVERY_SCOPE, quota=Quota(100, "day")).secret
    wider = {"name": "Wider", "scopes": ["pages:read"], "quota": {"requests": 101, "period": "day"}}
    refused = call(live_server, limited, "POST", "/keys", wider)
    assert refused.status_code == 403 and "quota" in refused.json()["message"]
    unlimited = call(live_server, limited, "POST", "/keys", {**wider, "quota": None})
    assert unlimited.status_code == 403
    inherited = call(
        live_server, limited, "POST", "/keys", {"name": "Same", "scopes": ["pages:read"]}
    )
    assert inherited.status_code == 201 and inherited.json()["quota"]["requests"] == 100


@pytest.mark.parametrize(
    "quota",
    [
        {"requests": 0, "period": "day"},
        {"requests": 10, "period": "year"},
        {"requests": "10", "period": "day"},
        {"requests": 10},
    ],
)
def test_a_malformed_quota_is_a_clear_400(live_server, manager, quota):
    body = {"name": "Bad", "scopes": ["pages:read"], "quota": quota}
    answer = call(live_server, manager.secret, "POST", "/keys", body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == "invalid-input"


def test_an_admin_lowers_a_quota_and_only_an_owner_raises_changes_or_removes_it(live_server, owner):
    from apps.workspaces.models import Membership
    from tests.factories import UserFactory

    admin = UserFactory(email="admin@example.com")
    Membership.objects.create(workspace=owner.memberships.get().workspace, user=admin, role="admin")
    admins = make_key(user=admin, scopes=EVERY_SCOPE, name="Admin's").secret
    owners = make_key(user=owner, scopes=EVERY_SCOPE, name="Owner's").secret
    target = make_key(user=owner, scopes=["pages:read"], quota=Quota(100, "day")).key
    path = f"/keys/{target.pk}/quota"
    lowered = call(live_server, admins, "PATCH", path, {"requests": 50, "period": "day"})
    assert lowered.status_code == 200, lowered.text
    assert lowered.json()["quota"] == {"requests": 50, "period": "day"}
    for raise_ in ({"requests": 60, "period": "day"}, {"requests": 10, "period": "week"}):
        refused = call(live_server, admins, "PATCH", path, raise_)
        assert refused.status_code == 403 and refused.json()["error"] == "insufficient-role"
    assert call(live_server, admins, "DELETE", path).status_code == 403
    raised = call(live_server, owners, "PATCH", path, {"requests": 1000, "period": "month"})
    assert raised.json()["quota"] == {"requests": 1000, "period": "month"}
    removed = call(live_server, owners, "DELETE", path)
    assert removed.status_code == 200 and removed.json()["quota"] is None
    changes = [e.data for e in AuditEvent.objects.filter(action="key.quota_set").order_by("pk")]
    assert changes == [
        {"before": {"requests": 100, "period": "day"}, "after": {"requests": 50, "period": "day"}},
        {
            "before": {"requests": 50, "period": "day"},
            "after": {"requests": 1000, "period": "month"},
        },
        {"before": {"requests": 1000, "period": "month"}, "after": None},
    ]


def test_a_lowered_quota_refuses_at_once_what_the_period_already_used(live_server, owner, manager):
    made = make_key(user=owner, scopes=["pages:read"], quota=Quota(10, "day"))
    assert [call(live_server, made.secret).status_code for _ in range(4)] == [200] * 4
    path = f"/keys/{made.key.pk}/quota"
    assert (
        call(
            live_server, manager.secret, "PATCH", path, {"requests": 5, "period": "day"}
        ).status_code
        == 200
    )
    assert [call(live_server, made.secret).status_code for _ in range(2)] == [200, 429]


def test_the_workspace_default_gives_every_new_member_key_a_quota_at_most(live_server, manager):
    from apps.api_keys.models import ApiKey
    from apps.common.validation import InvalidInput
    from tests.factories import make_community, member_of

    set_default = {"memberQuota": {"requests": 1000, "period": "month"}}
    answer = call(live_server, manager.secret, "PATCH", "/workspace/policy", set_default)
    assert answer.status_code == 200, answer.text
    assert answer.json()["memberQuota"] == {"requests": 1000, "period": "month"}
    workspace = manager.key.workspace
    member = member_of(make_community(workspace), email="member@example.com")
    made = make_key(
        user=member, workspace=workspace, kind=ApiKey.Kind.MEMBER, scopes=["communities:read"]
    )
    assert made.key.quota == Quota(1000, "month")
    smaller = make_key(
        user=member, workspace=workspace, kind=ApiKey.Kind.MEMBER,
        scopes=["communities:read"], quota=Quota(10, "month"),
    )  # fmt: skip
    assert smaller.key.quota == Quota(10, "month")
    with pytest.raises(InvalidInput, match="at most 1,000 requests a month"):
        make_key(
            user=member, workspace=workspace, kind=ApiKey.Kind.MEMBER,
            scopes=["communities:read"], quota=Quota(5000, "month"),
        )  # fmt: skip
    bad = call(live_server, manager.secret, "PATCH", "/workspace/policy", {"memberQuota": 5})
    assert bad.status_code == 400 and bad.json()["error"] == "invalid-input"
    cleared = call(live_server, manager.secret, "PATCH", "/workspace/policy", {"memberQuota": None})
    assert cleared.json()["memberQuota"] is None
