"""Restrictions against a live server: chosen objects, allowed networks, a key's own rate limit."""

import httpx
import pytest

from apps.api_keys.models import ApiKey
from apps.api_keys.restrictions import Restrictions, clean_networks
from apps.common.validation import InvalidInput
from apps.metering.refusals import refusals_last_day
from apps.pages.models import Page
from apps.products.models import Product
from tests.factories import make_community, make_key, member_of, owner_of

pytestmark = pytest.mark.django_db(transaction=True)


def get(live_server, secret: str, path: str, **headers: str) -> httpx.Response:
    return httpx.get(
        f"{live_server.url}/api/v1{path}",
        headers={"Authorization": f"Bearer {secret}", **headers},
        timeout=10,
    )


def post(live_server, secret: str, path: str, body: dict) -> httpx.Response:
    return httpx.post(
        f"{live_server.url}/api/v1{path}",
        headers={"Authorization": f"Bearer {secret}"},
        json=body,
        timeout=10,
    )


@pytest.fixture
def shop():
    owner = owner_of()
    workspace = owner.memberships.get().workspace
    communities = [make_community(workspace, name=f"C{i}") for i in range(3)]
    products = [
        Product.objects.create(workspace=workspace, name=f"P{i}", price_cents=100) for i in range(3)
    ]
    pages = [
        Page.objects.create(workspace=workspace, title=f"Page {i}", slug=f"p{i}") for i in range(2)
    ]
    return owner, workspace, communities, products, pages


def test_a_key_limited_to_some_objects_sees_only_those_and_404s_the_rest(live_server, shop):
    owner, workspace, communities, products, pages = shop
    chosen = Restrictions(
        communities=(communities[0].pk,), products=(products[1].pk, products[2].pk), pages=()
    )
    secret = make_key(user=owner, restrictions=chosen).secret

    listed = get(live_server, secret, "/communities").json()["data"]
    assert [c["id"] for c in listed] == [communities[0].pk]
    assert {p["id"] for p in get(live_server, secret, "/products").json()["data"]} == {
        products[1].pk,
        products[2].pk,
    }
    assert get(live_server, secret, "/pages").json()["data"] == []  # an empty set is none
    # Posts of an unchosen community are as absent as the community itself.
    assert get(live_server, secret, f"/communities/{communities[0].pk}/posts").status_code == 200
    hidden = get(live_server, secret, f"/communities/{communities[1].pk}/posts")
    assert hidden.status_code == 404 and hidden.json()["error"] == "not-found"
    posted = post(
        live_server, secret, f"/communities/{communities[2].pk}/posts", {"title": "t", "body": "b"}
    )
    assert posted.status_code == 404


def test_creating_in_a_limited_group_is_refused_saying_why(live_server, shop):
    owner, *_ = shop
    _, _, communities, products, _ = shop
    secret = make_key(user=owner, restrictions=Restrictions(products=(products[0].pk,))).secret
    refused = post(live_server, secret, "/products", {"name": "New", "priceCents": 100})
    assert refused.status_code == 403
    assert refused.json()["error"] == "insufficient-scope"
    assert "limited to selected products" in refused.json()["message"]
    assert not Product.objects.filter(name="New").exists()
    # A group the key is not limited in creates as before, and posting in a chosen community
    # is not creating a community.
    created = post(live_server, secret, "/pages", {"title": "Fine", "slug": "fine", "body": "x"})
    assert created.status_code == 201
    limited = make_key(user=owner, restrictions=Restrictions(communities=(communities[0].pk,)))
    assert (
        post(
            live_server,
            limited.secret,
            f"/communities/{communities[0].pk}/posts",
            {"title": "t", "body": "b"},
        ).status_code
        == 201
    )


def test_a_member_key_narrowed_to_some_of_the_members_communities(live_server, shop):
    _, workspace, communities, _, _ = shop
    member = member_of(communities[0])
    communities[1].memberships.create(user=member)
    with pytest.raises(InvalidInput, match="no community"):  # not the member's community
        make_key(
            user=member,
            workspace=workspace,
            kind=ApiKey.Kind.MEMBER,
            scopes=["communities:read"],
            restrictions=Restrictions(communities=(communities[2].pk,)),
        )
    secret = make_key(
        user=member,
        workspace=workspace,
        kind=ApiKey.Kind.MEMBER,
        scopes=["communities:read"],
        restrictions=Restrictions(communities=(communities[1].pk,)),
    ).secret
    listed = get(live_server, secret, "/communities").json()["data"]
    assert [c["id"] for c in listed] == [communities[1].pk]
    assert get(live_server, secret, f"/communities/{communities[0].pk}/posts").status_code == 404


def test_a_deleted_object_drops_out_of_the_chosen_set_and_never_widens_it(live_server, shop):
    owner, _, communities, _, _ = shop
    created = make_key(user=owner, restrictions=Restrictions(communities=(communities[0].pk,)))
    communities[0].delete()
    key = ApiKey.objects.get(pk=created.key.pk)
    assert key.community_ids == []  # none, not all
    assert get(live_server, created.secret, "/communities").json()["data"] == []


def test_a_request_from_outside_the_allowed_networks_is_refused_and_stamps_no_use(
    live_server, shop, settings
):
    owner, *_ = shop
    outside = make_key(user=owner, restrictions=Restrictions(networks=("10.0.0.0/8",)))
    refused = get(live_server, outside.secret, "/workspace")
    assert refused.status_code == 403
    assert refused.json()["error"] == "ip-not-allowed"
    assert "127.0.0.1" in refused.json()["message"]
    assert ApiKey.objects.get(pk=outside.key.pk).last_used_at is None
    assert "RateLimit" not in refused.headers  # a stolen key spends none of the holder's requests
    assert refusals_last_day(outside.key.pk) == {"ip-not-allowed": 1}  # on its page

    inside = make_key(user=owner, restrictions=Restrictions(networks=("::1/128", "127.0.0.0/8")))
    assert get(live_server, inside.secret, "/workspace").status_code == 200
    assert ApiKey.objects.get(pk=inside.key.pk).last_used_at is not None


def test_the_allowed_networks_follow_the_trusted_proxy_setting(live_server, shop, settings):
    owner, *_ = shop
    secret = make_key(user=owner, restrictions=Restrictions(networks=("203.0.113.0/24",))).secret
    forwarded = {"X-Forwarded-For": "203.0.113.7"}
    # Without a trusted proxy the header is the client's own word and is ignored.
    assert get(live_server, secret, "/workspace", **forwarded).status_code == 403
    settings.TRUSTED_PROXY_COUNT = 1
    assert get(live_server, secret, "/workspace", **forwarded).status_code == 200
    spoofed = {"X-Forwarded-For": "203.0.113.7, 198.51.100.1"}  # the proxy saw 198.51.100.1
    assert get(live_server, secret, "/workspace", **spoofed).status_code == 403


def test_a_keys_own_rate_limit_is_enforced_and_announced(live_server, shop):
    owner, *_ = shop
    secret = make_key(user=owner, restrictions=Restrictions(rate_limit_per_minute=2)).secret
    first = get(live_server, secret, "/workspace")
    assert first.headers["RateLimit-Policy"] == '"default";q=2;w=60'
    assert get(live_server, secret, "/workspace").status_code == 200
    third = get(live_server, secret, "/workspace")
    assert third.status_code == 429 and third.json()["error"] == "rate-limited"
    # Another key of the same holder keeps the server's default.
    other = get(live_server, make_key(user=owner).secret, "/workspace")
    assert other.headers["RateLimit-Policy"] == '"default";q=1000;w=60'


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        (["10.0.0.0/8"], ("10.0.0.0/8",)),
        (["192.0.2.1"], ("192.0.2.1/32",)),
        (["2001:DB8::/32", " 2001:db8::/32 "], ("2001:db8::/32",)),
    ],
)
def test_networks_are_normalised(given, stored):
    assert clean_networks(given) == stored


@pytest.mark.parametrize(
    ("given", "says"),
    [
        (["10.0.0.1/8"], "10.0.0.0/8"),
        (["10.0.0.0/33"], "not an IPv4 or IPv6 range"),
        (["example.com"], "not an IPv4 or IPv6 range"),
        ([f"10.0.{i}.0/24" for i in range(21)], "at most 20"),
        ("10.0.0.0/8", "list"),
    ],
)
def test_bad_networks_are_refused_in_plain_words(given, says):
    with pytest.raises(InvalidInput, match=says.replace(".", r"\.")):
        clean_networks(given)


def test_with_limits_off_any_own_rate_limit_is_tighter_and_none_is_not():
    unlimited = Restrictions()
    limited = Restrictions(rate_limit_per_minute=60)
    assert limited.wider_than(unlimited, default_rate=0) is None
    assert "no rate limit" in unlimited.wider_than(limited, default_rate=0)
    assert "1,000" in unlimited.wider_than(
        Restrictions(rate_limit_per_minute=10), default_rate=1000
    )
