"""Who did something, as the audit log names them: a service account by its name, never by its
undeliverable svc-…@service.gatehouse.invalid address (issue 54, item 6)."""

import pytest

from apps.audit.services import Actor
from apps.service_accounts.services import service_account_create
from tests.factories import make_key

pytestmark = pytest.mark.django_db


def test_a_service_account_is_named_whether_it_acts_itself_or_through_its_key(workspace, owner):
    account = service_account_create(
        workspace=workspace, name="Nightly sync", actor=Actor.of_user(owner)
    )
    assert Actor.of_user(account.user).label == "service account Nightly sync"
    key = make_key(user=account.user, workspace=workspace, name="Sync").key
    assert Actor.of_key(key).label == f"key Sync ({key.hint}) of service account Nightly sync"
    assert Actor.of_user(owner).label == owner.email
