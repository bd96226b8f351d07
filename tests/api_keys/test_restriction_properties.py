"""Properties (Hypothesis): for random keys, restrictions and requests the API answers exactly
what the restrictions predict, and no key ever mints a key wider than itself.

The oracles here are written independently of apps/api_keys/restrictions.py: plain set and
`ipaddress` arithmetic over what the test created.
"""

import ipaddress
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from apps.api.scopes import ALL_SCOPES
from apps.api_keys.models import ApiKey
from apps.api_keys.restrictions import Restrictions
from apps.communities.models import Community
from apps.pages.models import Page
from apps.products.models import Product
from tests.factories import make_community, make_key, owner_of

pytestmark = pytest.mark.django_db

NETWORKS = ["10.0.0.0/8", "10.1.0.0/16", "192.0.2.0/24", "2001:db8::/32", "198.51.100.7/32"]
ADDRESSES = ["10.1.2.3", "10.200.0.1", "192.0.2.9", "2001:db8::5", "198.51.100.7", "203.0.113.1"]
DEFAULT_RATE = 1000
SETTINGS = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture
def world(db):
    owner = owner_of()
    workspace = owner.memberships.get().workspace
    ids = {
        "communities": [make_community(workspace, name=f"C{i}").pk for i in range(4)],
        "products": [
            Product.objects.create(workspace=workspace, name=f"P{i}", price_cents=1).pk
            for i in range(3)
        ],
        "pages": [
            Page.objects.create(workspace=workspace, title=f"T{i}", slug=f"t{i}").pk
            for i in range(3)
        ],
    }
    return owner, workspace, ids


def chosen(ids: list[int]) -> st.SearchStrategy:
    return st.none() | st.lists(st.sampled_from(ids), unique=True, max_size=len(ids))


@st.composite
def restrictions_in(draw, ids: dict[str, list[int]]) -> Restrictions:
    return Restrictions(
        communities=_tuple(draw(chosen(ids["communities"]))),
        pages=_tuple(draw(chosen(ids["pages"]))),
        products=_tuple(draw(chosen(ids["products"]))),
        networks=tuple(draw(st.lists(st.sampled_from(NETWORKS), unique=True, max_size=3))),
        rate_limit_per_minute=draw(st.none() | st.integers(100, 5000)),
    )


def _tuple(value):
    return None if value is None else tuple(sorted(value))


def in_networks(address: str, networks) -> bool:
    ip = ipaddress.ip_address(address)
    return not networks or any(
        ip.version == ipaddress.ip_network(n).version and ip in ipaddress.ip_network(n)
        for n in networks
    )


def visible(group: str, limit, workspace) -> set[int]:
    model = {"communities": Community, "products": Product, "pages": Page}[group]
    everything = set(model.objects.filter(workspace=workspace).values_list("pk", flat=True))
    return everything if limit is None else everything & set(limit)


@SETTINGS
@given(data=st.data())
def test_the_api_answers_what_the_restrictions_predict(world, data):
    owner, workspace, ids = world
    limits = data.draw(restrictions_in(ids))
    scopes = data.draw(st.lists(st.sampled_from(ALL_SCOPES), unique=True, min_size=1))
    secret = make_key(user=owner, scopes=scopes, restrictions=limits).secret
    address = data.draw(st.sampled_from(ADDRESSES))
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}", REMOTE_ADDR=address)
    allowed_here = in_networks(address, limits.networks)
    event("address allowed" if allowed_here else "address refused")
    event("limited in some group" if limits.chosen != Restrictions().chosen else "no group limit")

    for group in ("communities", "products", "pages"):
        answer = client.get(f"/api/v1/{group}")
        if not allowed_here:
            assert (answer.status_code, answer.json()["error"]) == (403, "ip-not-allowed")
            continue
        if f"{group}:read" not in scopes:
            assert answer.status_code == 403
            continue
        assert answer.status_code == 200
        limit = getattr(limits, group)
        assert {row["id"] for row in answer.json()["data"]} == visible(group, limit, workspace)
        policy = answer["RateLimit-Policy"]
        assert policy == f'"default";q={limits.rate_limit_per_minute or DEFAULT_RATE};w=60'

    community = data.draw(st.sampled_from(ids["communities"]))
    posts = client.get(f"/api/v1/communities/{community}/posts")
    if allowed_here and "communities:read" in scopes:
        reachable = limits.communities is None or community in limits.communities
        assert posts.status_code == (200 if reachable else 404)

    group = data.draw(st.sampled_from(["products", "pages"]))
    body = (
        {"name": "New", "priceCents": 5}
        if group == "products"
        else {"title": "New", "slug": f"new-{ApiKey.objects.count()}", "body": ""}
    )
    created = client.post(f"/api/v1/{group}", body, content_type="application/json")
    if not allowed_here:
        assert created.status_code == 403
    elif f"{group}:write" not in scopes or getattr(limits, group) is not None:
        assert (created.status_code, created.json()["error"]) == (403, "insufficient-scope")
    else:
        assert created.status_code == 201


def wider(new: ApiKey, caller: ApiKey) -> bool:
    """The oracle: does `new` reach anything `caller` does not?"""
    if not set(new.scopes) <= set(caller.scopes):
        return True
    for field in ("community_ids", "page_ids", "product_ids"):
        mine, bound = getattr(new, field), getattr(caller, field)
        if bound is not None and (mine is None or not set(mine) <= set(bound)):
            return True
    if caller.allowed_networks:
        if not new.allowed_networks:
            return True
        for network in map(ipaddress.ip_network, new.allowed_networks):
            outers = [ipaddress.ip_network(n) for n in caller.allowed_networks]
            if not any(
                network.version == outer.version and network.subnet_of(outer) for outer in outers
            ):
                return True
    if (new.rate_limit_per_minute or DEFAULT_RATE) > (caller.rate_limit_per_minute or DEFAULT_RATE):
        return True
    return caller.expires_at is not None and (
        new.expires_at is None or new.expires_at > caller.expires_at
    )


def minting_key(data, holder, ids) -> tuple:
    """A key of `holder` with keys:write, random scopes, restrictions and expiry; and its
    scopes but keys:write."""
    caller_scopes = data.draw(st.lists(st.sampled_from(ALL_SCOPES), unique=True))
    caller = make_key(
        user=holder,
        scopes=[*caller_scopes, "keys:write"],
        restrictions=data.draw(restrictions_in(ids)),
        expires_in=data.draw(st.sampled_from([timedelta(days=20), timedelta(days=200), None])),
    )
    return caller, caller_scopes


def minted_scopes(caller_scopes: list[str]) -> st.SearchStrategy:
    """Half the time a subset of the caller's own scopes, so that many mints succeed."""
    return st.lists(st.sampled_from([*caller_scopes, "keys:write"]), min_size=1) | st.lists(
        st.sampled_from([*ALL_SCOPES, "keys:read", "keys:write"]), min_size=1
    )


@SETTINGS
@given(data=st.data())
def test_no_minted_key_is_ever_wider_than_its_minter(world, data):
    owner, workspace, ids = world
    caller, caller_scopes = minting_key(data, owner, ids)
    body = {
        "name": "Minted",
        "scopes": data.draw(minted_scopes(caller_scopes)),
        "restrictions": {
            name: value
            for name, value in Restrictions.as_json(data.draw(restrictions_in(ids))).items()
            if data.draw(st.booleans())
        },
        **data.draw(
            st.sampled_from([{}, {"expiresInDays": 7}, {"expiresInDays": 90}, {"noExpiry": True}])
        ),
    }
    client = Client(HTTP_AUTHORIZATION=f"Bearer {caller.secret}", REMOTE_ADDR="10.1.2.3")
    keys_before = ApiKey.objects.count()
    answer = client.post("/api/v1/keys", body, content_type="application/json")
    before = timezone.now()
    event(f"create answered {answer.status_code}")
    if answer.status_code == 201:
        new = ApiKey.objects.get(pk=answer.json()["id"])
        assert not wider(new, caller.key), (body, answer.json())
        assert new.created_at <= before
    else:
        # Refused: for being wider, for the caller's own networks, or for the workspace policy.
        assert answer.status_code in (400, 403), answer.content
        assert ApiKey.objects.count() == keys_before


@pytest.fixture
def service_world(world):
    """The world, with a service account of its workspace and an admin of it."""
    from apps.audit.services import Actor
    from apps.service_accounts.services import service_account_create
    from tests.factories import MembershipFactory, UserFactory

    owner, workspace, ids = world
    account = service_account_create(workspace=workspace, name="CI", actor=Actor.of_user(owner))
    admin = MembershipFactory(workspace=workspace, user=UserFactory(), role="admin").user
    return owner, admin, account, ids


@SETTINGS
@given(data=st.data())
def test_service_accounts_and_their_keys_never_mint_wider(service_world, data):
    """Owners' keys minting a service account's keys, and those minting their own account's:
    never wider than the minter, always the same account's, never an owner's powers; an
    admin's key never mints one at all."""
    owner, admin, account, ids = service_world
    minter = data.draw(st.sampled_from(["owner", "service account", "admin"]))
    holder = {"owner": owner, "admin": admin, "service account": account.user}[minter]
    caller, caller_scopes = minting_key(data, holder, ids)
    body = {
        "name": "Minted",
        "scopes": data.draw(minted_scopes(caller_scopes)),
        **data.draw(st.sampled_from([{}, {"expiresInDays": 7}, {"noExpiry": True}])),
    }
    path = (
        "/api/v1/keys"
        if minter == "service account"
        else f"/api/v1/service-accounts/{account.pk}/keys"
    )
    client = Client(HTTP_AUTHORIZATION=f"Bearer {caller.secret}", REMOTE_ADDR="10.1.2.3")
    keys_before = ApiKey.objects.count()
    answer = client.post(path, body, content_type="application/json")
    event(f"{minter}: {answer.status_code}")
    if minter == "admin":  # refused for the role, or before that for its own networks
        assert answer.status_code == 403
        assert answer.json()["error"] in ("insufficient-role", "ip-not-allowed")
    if answer.status_code == 201:
        new = ApiKey.objects.get(pk=answer.json()["id"])
        assert new.user_id == account.user_id, "always the service account's key"
        assert not wider(new, caller.key), (body, answer.json())
        if new.state == "active":
            settings_change = Client(HTTP_AUTHORIZATION=f"Bearer {answer.json()['secret']}").patch(
                "/api/v1/workspace/policy", {"idleDays": 90}, content_type="application/json"
            )
            assert settings_change.status_code == 403, "an admin's powers, never an owner's"
    else:
        assert answer.status_code in (400, 403), answer.content
        assert ApiKey.objects.count() == keys_before
