"""A key handed over to a service account keeps its quota, or joins the one the account's keys
share (docs/product.md §12, §17): a hand-over never widens a key."""

from datetime import timedelta

import pytest

from apps.audit.services import Actor
from apps.common.quota_periods import Quota
from apps.service_accounts.handover import key_hand_over
from apps.service_accounts.services import service_account_create, service_account_update
from tests.factories import make_key

pytestmark = pytest.mark.django_db


@pytest.fixture
def account(workspace, owner):
    return service_account_create(workspace=workspace, name="Sync", actor=Actor.of_user(owner))


def test_a_handed_over_key_keeps_its_quota(workspace, owner, admin, account):
    made = make_key(user=admin, workspace=workspace, scopes=["pages:read"], quota=Quota(7, "day"))
    new = key_hand_over(
        key=made.key, account=account, grace=timedelta(0), actor=Actor.of_user(owner)
    ).key
    assert new.quota == Quota(7, "day") and not new.quota_shared


def test_a_key_handed_over_to_an_account_sharing_a_quota_joins_it(workspace, owner, admin, account):
    actor = Actor.of_user(owner)
    service_account_update(
        account=account, changes={"quotaShared": {"requests": 50, "period": "week"}}, actor=actor
    )
    made = make_key(user=admin, workspace=workspace, scopes=["pages:read"], quota=Quota(7, "day"))
    new = key_hand_over(key=made.key, account=account, grace=timedelta(0), actor=actor).key
    new.refresh_from_db()
    assert new.quota == Quota(50, "week") and new.quota_shared
