"""One quota for all of a service account's keys (quotaShared, docs/product.md §17), through
the HTTP API against a live server: counted in PostgreSQL (no Redis) and in Redis."""

import pytest
from django.core import mail

from apps.api.scopes import EVERY_SCOPE
from apps.audit.models import AuditEvent
from apps.quotas.models import QuotaCounter
from apps.workspaces.models import Membership
from tests.conftest import run_tasks
from tests.factories import make_key, owner_of

from .test_quota_api import call

pytestmark = pytest.mark.django_db(transaction=True)
READ = {"scopes": ["pages:read"]}


@pytest.fixture
def owner():
    return owner_of(email="owner@example.com")


@pytest.fixture
def manager(owner):
    return make_key(user=owner, scopes=EVERY_SCOPE, name="Manager")


def make_account(live_server, manager, shared=None) -> dict:
    body = {"name": "CI deploy", **({"quotaShared": shared} if shared else {})}
    made = call(live_server, manager.secret, "POST", "/service-accounts", body)
    assert made.status_code == 201, made.text
    return made.json()


def account_key(live_server, manager, account_id: int, name: str, **fields) -> dict:
    path = f"/service-accounts/{account_id}/keys"
    made = call(live_server, manager.secret, "POST", path, {"name": name, **READ, **fields})
    assert made.status_code == 201, made.text
    return made.json()


def statuses(live_server, secret: str, times: int) -> list[int]:
    return [call(live_server, secret).status_code for _ in range(times)]


def share(live_server, manager, account_id: int, quota) -> dict:
    path = f"/service-accounts/{account_id}"
    changed = call(live_server, manager.secret, "PATCH", path, {"quotaShared": quota})
    assert changed.status_code == 200, changed.text
    return changed.json()


def test_keys_made_before_and_after_the_sharing_draw_from_one_allowance(live_server, manager):
    account = make_account(live_server, manager)
    before = account_key(live_server, manager, account["id"], "Before")
    assert statuses(live_server, before["secret"], 2) == [200, 200]  # no quota yet
    shared = share(live_server, manager, account["id"], {"requests": 5, "period": "day"})
    assert shared["quotaShared"] == {"requests": 5, "period": "day"}
    after = account_key(live_server, manager, account["id"], "After")
    assert after["quota"] == {"requests": 5, "period": "day"} and after["quotaShared"] is True
    # The period began at the account's creation: the 2 answered before the sharing count.
    assert statuses(live_server, after["secret"], 2) == [200, 200]
    assert statuses(live_server, before["secret"], 2) == [200, 429]
    refused = call(live_server, after["secret"])
    assert refused.status_code == 429 and refused.json()["error"] == "quota-exceeded"
    assert '"quota";q=5;w=86400' in refused.headers["RateLimit-Policy"]
    shown = call(live_server, manager.secret, "GET", f"/service-accounts/{account['id']}")
    assert shown.json()["quotaUse"]["used"] == 5 and shown.json()["quotaUse"]["left"] == 0
    record = call(live_server, manager.secret, "GET", f"/keys/{before['id']}").json()
    assert record["quotaShared"] is True and record["quotaUse"]["left"] == 0
    [audited] = AuditEvent.objects.filter(action="service_account.updated")
    assert audited.data == {
        "field": "quotaShared",
        "before": None,
        "after": {"requests": 5, "period": "day"},
        "keys": 1,
    }


def test_a_top_up_through_one_key_serves_every_key_of_the_account(live_server, manager):
    account = make_account(live_server, manager, {"requests": 2, "period": "never"})
    first = account_key(live_server, manager, account["id"], "First")
    second = account_key(live_server, manager, account["id"], "Second")
    assert statuses(live_server, first["secret"], 3) == [200, 200, 429]
    topped = call(live_server, manager.secret, "POST", f"/keys/{first['id']}/quota", {"add": 2})
    assert topped.status_code == 200 and topped.json()["left"] == 2, topped.text
    assert statuses(live_server, second["secret"], 3) == [200, 200, 429]
    assert QuotaCounter.objects.filter(scope__startswith="k").count() == 0  # one count: the pool


def test_a_shared_key_has_no_quota_of_its_own_to_set_or_ask_for(live_server, manager):
    account = make_account(live_server, manager, {"requests": 100, "period": "month"})
    key = account_key(live_server, manager, account["id"], "Pooled")
    path = f"/keys/{key['id']}/quota"
    lowered = call(live_server, manager.secret, "PATCH", path, {"requests": 5, "period": "month"})
    assert lowered.status_code == 409 and "shared quota" in lowered.json()["message"]
    removed = call(live_server, manager.secret, "DELETE", path)
    assert removed.status_code == 409
    other = call(
        live_server,
        manager.secret,
        "POST",
        f"/service-accounts/{account['id']}/keys",
        {"name": "Own", **READ, "quota": {"requests": 5, "period": "day"}},
    )
    assert other.status_code == 400 and "share one quota of 100" in other.json()["message"]
    shown = call(live_server, manager.secret, "GET", f"/keys/{key['id']}").json()
    assert shown["quota"] == {"requests": 100, "period": "month"}  # unchanged


def test_ending_the_sharing_leaves_each_key_the_quota_as_its_own(live_server, manager):
    account = make_account(live_server, manager, {"requests": 3, "period": "day"})
    first = account_key(live_server, manager, account["id"], "First")
    second = account_key(live_server, manager, account["id"], "Second")
    assert statuses(live_server, first["secret"], 3) == [200, 200, 200]
    assert call(live_server, second["secret"]).status_code == 429
    ended = share(live_server, manager, account["id"], None)
    assert ended["quotaShared"] is None and ended["quotaUse"] is None
    # Each key's own count, rebuilt from its own answered requests: the first used its 3.
    assert statuses(live_server, first["secret"], 1) == [429]
    assert statuses(live_server, second["secret"], 4) == [200, 200, 200, 429]
    record = call(live_server, manager.secret, "GET", f"/keys/{second['id']}").json()
    assert record["quotaShared"] is False and record["quota"] == {"requests": 3, "period": "day"}


def test_only_an_owner_shares_a_quota_and_a_bad_one_is_refused_in_words(
    live_server, owner, manager
):
    account = make_account(live_server, manager)
    admin = owner_of(workspace=owner.memberships.first().workspace, email="admin@example.com")
    Membership.objects.filter(user=admin).update(role=Membership.Role.ADMIN)
    admin_key = make_key(user=admin, scopes=EVERY_SCOPE, name="Admin's")
    path = f"/service-accounts/{account['id']}"
    body = {"quotaShared": {"requests": 5, "period": "day"}}
    assert call(live_server, admin_key.secret, "PATCH", path, body).status_code == 403
    bad = call(live_server, manager.secret, "PATCH", path, {"quotaShared": {"requests": 0}})
    assert bad.status_code == 400, bad.text
    fortnight = {"quotaShared": {"requests": 5, "period": "fortnight"}}
    assert call(live_server, manager.secret, "PATCH", path, fortnight).status_code == 400
    shown = call(live_server, manager.secret, "GET", path).json()
    assert shown["quotaShared"] is None
    assert not AuditEvent.objects.filter(action="service_account.updated").exists()


def test_the_owners_are_told_once_at_80_and_100_percent_of_the_shared_quota(live_server, manager):
    account = make_account(live_server, manager, {"requests": 5, "period": "day"})
    first = account_key(live_server, manager, account["id"], "First")
    second = account_key(live_server, manager, account["id"], "Second")
    assert statuses(live_server, first["secret"], 4) == [200] * 4  # 80 %
    assert statuses(live_server, second["secret"], 2) == [200, 429]
    told = AuditEvent.objects.filter(action__startswith="key.quota_").order_by("pk")
    assert [e.action for e in told] == ["key.quota_warning", "key.quota_exhausted"]
    assert told[0].key_id is None and told[0].data["serviceAccount"] == account["id"]
    assert told[0].subject == "CI deploy's shared quota"
    run_tasks()
    mails = [m for m in mail.outbox if "quota" in m.subject]
    assert [m.to for m in mails] == [["owner@example.com"]] * 2
    assert "service account “CI deploy”" in mails[0].subject
    assert f"/team/service-accounts/{account['id']}/" in mails[0].body


def test_with_redis_the_shared_count_is_one_count_in_redis(live_server, manager, with_redis):
    from tests.usage.test_redis_counts import redis_client

    account = make_account(live_server, manager, {"requests": 4, "period": "week"})
    keys = [account_key(live_server, manager, account["id"], f"K{n}") for n in range(2)]
    answered = [call(live_server, keys[n % 2]["secret"]).status_code for n in range(6)]
    assert answered == [200, 200, 200, 200, 429, 429]
    names = [name.decode() for name in redis_client().keys("gatehouse:quota:*:*")]
    assert len(names) == 1 and names[0].startswith("gatehouse:quota:u"), names
    assert int(redis_client().get(names[0])) == 4


def test_a_whole_number_written_as_2755_0_is_a_quota_and_2755_5_is_refused(live_server, manager):
    # JSON Schema's integer takes 2755.0 (the OpenAPI fuzzer sent it and was refused before).
    account = make_account(live_server, manager)
    shared = share(live_server, manager, account["id"], {"requests": 2755.0, "period": "month"})
    assert shared["quotaShared"] == {"requests": 2755, "period": "month"}
    path = f"/service-accounts/{account['id']}"
    half = {"quotaShared": {"requests": 2755.5, "period": "month"}}
    refused = call(live_server, manager.secret, "PATCH", path, half)
    assert refused.status_code == 400 and "whole number" in refused.json()["message"]
    key = call(
        live_server,
        manager.secret,
        "POST",
        "/keys",
        {"name": "Whole", **READ, "quota": {"requests": 10.0, "period": "day"}},
    )
    assert key.status_code == 201 and key.json()["quota"]["requests"] == 10, key.text


def test_a_bad_shared_quota_at_creation_makes_no_account(live_server, manager):
    body = {"name": "Half made", "quotaShared": {"requests": 0, "period": "day"}}
    refused = call(live_server, manager.secret, "POST", "/service-accounts", body)
    assert refused.status_code == 400, refused.text
    listed = call(live_server, manager.secret, "GET", "/service-accounts").json()["data"]
    assert [a["name"] for a in listed] == []
