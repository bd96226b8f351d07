"""The API keys group (GET/POST /keys, roll, narrow, DELETE) against a live server."""

from datetime import timedelta

import httpx
import pytest
from django.utils import timezone

from apps.api.http import iso_time
from apps.api.scopes import ALL_SCOPES, EVERY_SCOPE
from apps.api_keys.models import ApiKey
from apps.api_keys.restrictions import Restrictions
from apps.audit.models import AuditEvent
from apps.common.validation import InvalidInput
from apps.workspaces.models import Membership
from tests.factories import UserFactory, make_community, make_key, member_of, owner_of

pytestmark = pytest.mark.django_db(transaction=True)


def call(live_server, secret: str, method: str, path: str, body=None, **params) -> httpx.Response:
    return httpx.request(
        method,
        f"{live_server.url}/api/v1{path}",
        headers={"Authorization": f"Bearer {secret}"},
        json=body,
        params=params,
        timeout=10,
    )


@pytest.fixture
def owner():
    return owner_of(email="owner@example.com")


@pytest.fixture
def manager(owner):
    """The owner's key that manages keys: every scope."""
    return make_key(user=owner, scopes=EVERY_SCOPE, name="Manager")


def teammate(owner, role: str, email: str):
    user = UserFactory(email=email)
    Membership.objects.create(workspace=owner.memberships.get().workspace, user=user, role=role)
    return user


def test_list_keys_shows_every_key_of_the_workspace_as_metadata_only(live_server, owner, manager):
    admin = teammate(owner, "admin", "admin@example.com")
    theirs = make_key(user=admin, scopes=["pages:read"], name="Admin's")
    make_key(name="Elsewhere")  # another workspace
    answer = call(live_server, manager.secret, "GET", "/keys")
    assert answer.status_code == 200
    records = answer.json()["data"]
    assert [r["name"] for r in records] == ["Admin's", "Manager"]
    record = records[0]
    assert record["holderEmail"] == "admin@example.com"
    assert record["hint"] == theirs.key.hint and record["state"] == "active"
    assert record["restrictions"] == {
        "communities": None,
        "pages": None,
        "products": None,
        "networks": [],
        "rateLimitPerMinute": None,
    }
    assert theirs.secret not in answer.text and theirs.key.secret_hash not in answer.text
    assert answer.json()["next"] is None


def test_list_keys_filters_by_state_kind_and_holder(live_server, owner, manager):
    admin = teammate(owner, "admin", "admin@example.com")
    revoked = make_key(user=admin, name="Gone")
    call(live_server, manager.secret, "DELETE", f"/keys/{revoked.key.pk}")
    names = lambda **params: [  # noqa: E731
        r["name"]
        for r in call(live_server, manager.secret, "GET", "/keys", **params).json()["data"]
    ]
    assert names(state="revoked") == ["Gone"]
    assert names(state="active") == ["Manager"]
    assert names(state="current") == ["Manager"]  # what works or waits, as the dashboard opens
    assert names() == ["Gone", "Manager"]
    assert names(holder="ADMIN@example.com") == ["Gone"]
    assert names(kind="member") == []
    bad = call(live_server, manager.secret, "GET", "/keys", state="sleeping")
    assert bad.status_code == 400 and "state" in bad.json()["message"]


def test_pages_of_keys_are_stable_while_keys_are_created(live_server, owner, manager):
    for number in range(4):
        make_key(user=owner, name=f"K{number}")
    first = call(live_server, manager.secret, "GET", "/keys", limit=2).json()
    assert [r["name"] for r in first["data"]] == ["K3", "K2"]
    make_key(user=owner, name="Newer")  # lands before page one, shifts nothing after it
    second = call(live_server, manager.secret, "GET", "/keys", limit=2, cursor=first["next"])
    assert [r["name"] for r in second.json()["data"]] == ["K1", "K0"]
    third = call(live_server, manager.secret, "GET", "/keys", limit=2, cursor=second.json()["next"])
    assert [r["name"] for r in third.json()["data"]] == ["Manager"]
    assert third.json()["next"] is None
    forged = call(live_server, manager.secret, "GET", "/keys", cursor="not-a-cursor")
    assert forged.status_code == 400 and forged.json()["error"] == "invalid-input"


def test_get_key_says_when_each_scope_was_last_used(live_server, owner, manager):
    used = make_key(user=owner, scopes=["pages:read", "products:read"])
    call(live_server, used.secret, "GET", "/pages")
    record = call(live_server, manager.secret, "GET", f"/keys/{used.key.pk}").json()
    assert record["scopesLastUsed"]["pages:read"] is not None
    assert record["scopesLastUsed"]["products:read"] is None
    other = make_key(name="Elsewhere")
    assert call(live_server, manager.secret, "GET", f"/keys/{other.key.pk}").status_code == 404


def test_keys_scopes_need_an_owner_or_admin_now(live_server, owner, manager):
    assert call(live_server, make_key(user=owner).secret, "GET", "/keys").status_code == 403
    admin = teammate(owner, "admin", "admin@example.com")
    admins = make_key(user=admin, scopes=["keys:read"])
    assert call(live_server, admins.secret, "GET", "/keys").status_code == 200
    Membership.objects.filter(user=admin).update(role="member")
    demoted = call(live_server, admins.secret, "GET", "/keys")
    assert demoted.status_code == 403 and demoted.json()["error"] == "insufficient-role"
    person = teammate(owner, "member", "member@example.com")
    with pytest.raises(InvalidInput, match="owners and admins"):
        make_key(user=person, scopes=["keys:read"])
    community = make_community(owner.memberships.get().workspace)
    member_key = make_key(
        user=member_of(community), kind=ApiKey.Kind.MEMBER, scopes=["communities:read"]
    )
    assert call(live_server, member_key.secret, "GET", "/keys").status_code == 403


def test_create_key_answers_the_secret_once_and_the_key_works(live_server, owner, manager):
    answer = call(
        live_server,
        manager.secret,
        "POST",
        "/keys",
        {"name": "Deploy", "scopes": ["pages:read"], "expiresInDays": 30},
    )
    assert answer.status_code == 201
    assert answer.headers["Cache-Control"] == "no-store"
    record = answer.json()
    assert record["scopes"] == ["pages:read"] and record["holderEmail"] == "owner@example.com"
    assert call(live_server, record["secret"], "GET", "/pages").status_code == 200
    listed = call(live_server, manager.secret, "GET", f"/keys/{record['id']}").json()
    assert "secret" not in listed
    event = AuditEvent.objects.get(action="key.created", key_id=record["id"])
    assert event.actor_key_id == manager.key.pk  # the calling key is the actor


def test_a_key_never_mints_a_wider_key(live_server, owner):
    workspace = owner.memberships.get().workspace
    community = make_community(workspace)
    narrow = make_key(
        user=owner,
        scopes=["keys:write", "pages:read", "communities:read"],
        expires_in=timedelta(days=10),
        restrictions=Restrictions(
            communities=(community.pk,), networks=("127.0.0.0/8",), rate_limit_per_minute=50
        ),
    )
    wider = [
        ({"scopes": ["pages:write"]}, "pages:write"),
        ({"scopes": ["pages:read"], "restrictions": {"communities": None}}, "all communities"),
        ({"scopes": ["pages:read"], "restrictions": {"networks": ["0.0.0.0/0"]}}, "0.0.0.0/0"),
        ({"scopes": ["pages:read"], "restrictions": {"rateLimitPerMinute": 51}}, "51"),
        ({"scopes": ["pages:read"], "expiresInDays": 30}, "outlive"),
        ({"scopes": ["pages:read"], "noExpiry": True}, "outlive"),
    ]
    for body, says in wider:
        answer = call(live_server, narrow.secret, "POST", "/keys", {"name": "W", **body})
        assert answer.status_code == 403, body
        assert answer.json()["error"] == "insufficient-scope" and says in answer.json()["message"]
    assert ApiKey.objects.count() == 1
    # Left out, the restrictions and the end are the calling key's own.
    child = call(
        live_server, narrow.secret, "POST", "/keys", {"name": "C", "scopes": ["pages:read"]}
    )
    assert child.status_code == 201
    assert child.json()["restrictions"]["communities"] == [community.pk]
    assert child.json()["restrictions"]["rateLimitPerMinute"] == 50
    assert ApiKey.objects.get(pk=child.json()["id"]).expires_at <= narrow.key.expires_at


def test_only_the_holder_rolls_and_never_a_key_wider_than_the_caller(live_server, owner, manager):
    admin = teammate(owner, "admin", "admin@example.com")
    admins = make_key(user=admin, scopes=EVERY_SCOPE)
    refused = call(live_server, admins.secret, "POST", f"/keys/{manager.key.pk}/roll", {})
    assert refused.status_code == 403 and refused.json()["error"] == "insufficient-role"
    small = make_key(user=owner, scopes=["keys:write"])
    full = make_key(user=owner, scopes=ALL_SCOPES, expires_in=timedelta(days=30))
    wider = call(live_server, small.secret, "POST", f"/keys/{full.key.pk}/roll", {})
    assert wider.status_code == 403 and wider.json()["error"] == "insufficient-scope"
    rolled = call(
        live_server, manager.secret, "POST", f"/keys/{full.key.pk}/roll", {"graceSeconds": 3600}
    )
    assert rolled.status_code == 200
    assert call(live_server, rolled.json()["secret"], "GET", "/products").status_code == 200
    assert call(live_server, full.secret, "GET", "/products").status_code == 200  # in its grace


def test_narrow_key_takes_away_and_refuses_to_widen(live_server, owner, manager):
    target = make_key(user=owner, scopes=["pages:read", "pages:write"])
    narrowed = call(
        live_server,
        manager.secret,
        "POST",
        f"/keys/{target.key.pk}/narrow",
        {"scopes": ["pages:read"], "restrictions": {"networks": ["10.0.0.0/8"]}},
    )
    assert narrowed.status_code == 200
    assert narrowed.json()["scopes"] == ["pages:read"]
    assert narrowed.json()["restrictions"]["networks"] == ["10.0.0.0/8"]
    assert call(live_server, target.secret, "GET", "/pages").json()["error"] == "ip-not-allowed"
    for body in ({"scopes": ["pages:write"]}, {"restrictions": {"networks": []}}):
        widened = call(live_server, manager.secret, "POST", f"/keys/{target.key.pk}/narrow", body)
        assert widened.status_code == 400, body
    events = AuditEvent.objects.filter(action="key.narrowed", key=target.key)
    assert {e.data.get("field", "permissions") for e in events} == {"permissions", "restrictions"}


def test_delete_key_revokes_it_for_the_next_request(live_server, owner, manager):
    admin = teammate(owner, "admin", "admin@example.com")
    target = make_key(user=admin)
    answer = call(live_server, manager.secret, "DELETE", f"/keys/{target.key.pk}")
    assert answer.status_code == 204 and answer.content == b""
    assert call(live_server, target.secret, "GET", "/workspace").json()["error"] == "revoked-key"
    event = AuditEvent.objects.get(action="key.revoked", key=target.key)
    assert event.actor_key_id == manager.key.pk


def test_a_create_missing_several_fields_names_them_all_at_once(live_server, manager):
    """One answer names every missing field, and every unknown one, not the first alone."""
    missing = call(live_server, manager.secret, "POST", "/keys", {})
    assert missing.status_code == 400
    assert missing.json()["message"] == "name and scopes are required."
    unknown = call(live_server, manager.secret, "POST", "/keys", {"nom": "x", "scope": []})
    assert unknown.status_code == 400
    assert unknown.json()["message"] == "nom and scope are not known fields."
    assert ApiKey.objects.count() == 1  # the manager's own


def test_a_handed_over_key_names_where_it_went_and_the_new_key_its_grace(
    live_server, owner, manager
):
    from apps.audit.services import Actor
    from apps.service_accounts.handover import key_hand_over
    from apps.service_accounts.services import service_account_create

    person = teammate(owner, "admin", "leaving@example.com")
    theirs = make_key(user=person, name="Billing sync", scopes=["pages:read"])
    before = call(live_server, manager.secret, "GET", f"/keys/{theirs.key.pk}").json()
    assert before["handedOverTo"] is None and before["previousSecretWorksUntil"] is None
    account = service_account_create(
        workspace=owner.memberships.get().workspace, name="Billing bot", actor=Actor.of_user(owner)
    )
    new = key_hand_over(
        key=theirs.key, account=account, grace=timedelta(hours=1), actor=Actor.of_user(owner)
    ).key
    old = call(live_server, manager.secret, "GET", f"/keys/{theirs.key.pk}").json()
    went = old["handedOverTo"]
    assert went["keyId"] == new.pk and went["hint"] == new.hint
    assert went["serviceAccount"] == "Billing bot"
    assert went["oldSecretWorksUntil"] == iso_time(new.previous_secret_expires_at)
    now_new = call(live_server, manager.secret, "GET", f"/keys/{new.pk}").json()
    assert now_new["previousSecretWorksUntil"] == went["oldSecretWorksUntil"]
    assert now_new["handedOverTo"] is None
    # The grace ends early (a leak report names the old secret): neither record says it works.
    ApiKey.objects.filter(pk=new.pk).update(previous_secret_expires_at=timezone.now())
    old = call(live_server, manager.secret, "GET", f"/keys/{theirs.key.pk}").json()
    assert old["handedOverTo"]["oldSecretWorksUntil"] is None
    assert (
        call(live_server, manager.secret, "GET", f"/keys/{new.pk}").json()[
            "previousSecretWorksUntil"
        ]
        is None
    )
