"""Restrictions in the dashboard: chosen on the create form, shown on the list, the key page and
the CSV, narrowed by hand or to what the key uses, and in the audit log."""

import csv
import io
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from apps.api_keys.models import ApiKey
from apps.api_keys.restrictions import Restrictions
from apps.audit.models import AuditEvent
from apps.products.models import Product
from tests.conftest import auth
from tests.factories import make_community, make_key, member_of

from .test_views import NEW, create

pytestmark = pytest.mark.django_db


@pytest.fixture
def communities(owner):
    workspace = owner.memberships.get().workspace
    return [make_community(workspace, name=name) for name in ("Alpha", "Beta", "Gamma")]


def test_the_create_form_limits_a_key_to_chosen_communities_and_networks(
    client, owner, communities
):
    form = client.get(NEW).content.decode()
    for community in communities:
        assert f'name="chosen_communities" value="{community.pk}"' in form
    refused = create(
        client,
        scopes=["communities:read"],
        limit_communities="selected",
        chosen_communities=[communities[0].pk, communities[2].pk],
        networks="10.0.0.1/8",
    )
    assert refused.status_code == 200 and not ApiKey.objects.exists()
    assert "the range it falls in is 10.0.0.0/8" in refused.content.decode()
    created = create(
        client,
        scopes=["communities:read"],
        limit_communities="selected",
        chosen_communities=[communities[0].pk, communities[2].pk],
        networks="10.0.0.0/8\n2001:DB8::/32",
        rate_limit="120",
    )
    assert created.status_code == 200
    key = ApiKey.objects.get()
    assert key.restrictions == Restrictions(
        communities=(communities[0].pk, communities[2].pk),
        networks=("10.0.0.0/8", "2001:db8::/32"),
        rate_limit_per_minute=120,
    )
    listing = client.get("/integrations/api/").content.decode()
    assert "2 communities · 2 networks · 120 a minute" in listing
    page = client.get(f"/integrations/api/keys/{key.pk}/").content.decode()
    assert "Only 2 communities: Alpha, Gamma" in page and "2001:db8::/32" in page
    created_event = AuditEvent.objects.get(action="key.created")
    assert created_event.data["restrictions"]["communities"] == [
        communities[0].pk,
        communities[2].pk,
    ]
    audit = client.get("/audit/").content.decode()
    assert "2 communities · 2 networks · 120 a minute" in audit


def test_a_rate_limit_out_of_range_is_refused_in_plain_words(client, owner):
    refused = create(client, rate_limit="100001")
    assert "from 1 to 100,000 a minute" in refused.content.decode()
    assert not ApiKey.objects.exists()


def test_owners_may_give_the_keys_scopes_and_no_shortcut_does(client, owner):
    form = client.get(NEW).content.decode()
    assert 'name="access_keys"' in form and "API keys" in form
    full = client.post(NEW, {"preset": "full", "name": "x", "access_keys": "none"})
    assert 'name="access_keys" value="none" checked' in full.content.decode()
    create(client, scopes=[], access_products="read", access_keys="read")
    assert ApiKey.objects.get().scopes == ["keys:read", "products:read"]


def test_a_members_form_offers_only_their_own_communities(client, owner, communities):
    member = member_of(communities[1])
    client.force_login(member)
    form = client.get("/portal/settings/developer/new/").content.decode()
    # By name: a bare value="30" would also match the expiry choice of 30 days.
    assert f'name="chosen_communities" value="{communities[1].pk}"' in form
    assert f'name="chosen_communities" value="{communities[0].pk}"' not in form
    assert 'name="access_keys"' not in form and 'name="chosen_products"' not in form


def test_narrowing_by_hand_tightens_and_never_widens_restrictions(client, owner, communities):
    created = make_key(
        user=owner,
        restrictions=Restrictions(
            communities=(communities[0].pk, communities[1].pk), networks=("10.0.0.0/8",)
        ),
    )
    url = f"/integrations/api/keys/{created.key.pk}/narrow/"
    page = client.get(f"/integrations/api/keys/{created.key.pk}/").content.decode()
    assert 'name="limit_communities" value="all"' not in page  # "All" is not offered
    assert f'name="chosen_communities" value="{communities[2].pk}"' not in page
    widen = client.post(
        url,
        {
            "scopes": created.key.scopes,
            "limit_communities": "all",
            "chosen_communities": [c.pk for c in communities],
            "networks": "",
        },
    )
    assert widen.status_code == 400
    assert f"community {communities[2].pk} is outside" in widen.content.decode()
    any_network = client.post(url, {"scopes": created.key.scopes, "networks": ""})
    assert "allow any network" in any_network.content.decode()
    assert ApiKey.objects.get(pk=created.key.pk).restrictions == created.key.restrictions
    narrowed = client.post(
        url,
        {
            "scopes": created.key.scopes,
            "limit_communities": "selected",
            "chosen_communities": [communities[1].pk],
            "networks": "10.1.0.0/16",
            "rate_limit": "30",
        },
    )
    assert narrowed.status_code == 302
    key = ApiKey.objects.get(pk=created.key.pk)
    assert key.restrictions == Restrictions(
        communities=(communities[1].pk,), networks=("10.1.0.0/16",), rate_limit_per_minute=30
    )
    event = AuditEvent.objects.get(action="key.narrowed")
    assert event.data["field"] == "restrictions"
    history = client.get(f"/integrations/api/keys/{created.key.pk}/").content.decode()
    assert "restrictions: 2 communities · 1 network → 1 community · 1 network · 30 a minute" in (
        history
    )


def test_chosen_objects_not_reached_for_30_days_are_flagged_and_dropped_in_one_step(
    client, owner, communities
):
    start = timezone.now()
    workspace = owner.memberships.get().workspace
    products = [
        Product.objects.create(workspace=workspace, name=n, price_cents=1) for n in ("P", "Q")
    ]
    with time_machine.travel(start, tick=False):
        created = make_key(
            user=owner,
            scopes=["communities:read"],
            restrictions=Restrictions(
                communities=(communities[0].pk, communities[1].pk),
                products=(products[0].pk,),
                networks=("127.0.0.0/8",),
            ),
        )
    with time_machine.travel(start + timedelta(days=20), tick=False):
        path = f"/api/v1/communities/{communities[0].pk}/posts"
        assert client.get(path, **auth(created.secret)).status_code == 200
    with time_machine.travel(start + timedelta(days=31), tick=False):
        client.force_login(owner)
        page = client.get(f"/integrations/api/keys/{created.key.pk}/").content.decode()
        assert "Chosen but not reached for 30 days: communities Beta; products P." in page
        assert "network" not in page.split("Chosen but not reached")[1].split(".")[0]
        response = client.post(
            f"/integrations/api/keys/{created.key.pk}/narrow/", {"used_only": "yes"}
        )
        assert response.status_code == 302
    key = ApiKey.objects.get(pk=created.key.pk)
    assert key.community_ids == [communities[0].pk] and key.product_ids == []
    assert key.allowed_networks == ["127.0.0.0/8"]  # an allowlist is never proposed away


def test_the_csv_carries_the_restrictions(client, owner, communities):
    make_key(
        user=owner,
        restrictions=Restrictions(
            communities=(communities[0].pk,), networks=("192.0.2.0/24",), rate_limit_per_minute=5
        ),
    )
    export = client.get("/integrations/api/export.csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(export.streaming_content).decode())))
    assert rows[0]["restrictions"] == "1 community · 1 network · 5 a minute"
    assert rows[0]["chosen_communities"] == str(communities[0].pk)
    assert rows[0]["chosen_pages"] == "all"
    assert rows[0]["allowed_networks"] == "192.0.2.0/24"
    assert rows[0]["rate_limit_per_minute"] == "5"


def test_a_restriction_refused_is_said_beside_its_own_field(client, owner):
    """The networks error used to sit at the top of the restrictions, far from its field."""
    page = create(client, networks="10.0.0.1/8").content.decode()
    error = page.index("the range it falls in is 10.0.0.0/8")
    assert page.index('name="networks"') < error < page.index('name="rate_limit"')
    page = create(client, rate_limit="100001").content.decode()
    assert page.index('name="rate_limit"') < page.index("from 1 to 100,000 a minute")


def test_a_community_ticked_under_all_communities_is_an_error_not_a_silent_choice(
    client, owner, communities
):
    page = create(
        client,
        scopes=["communities:read"],
        limit_communities="all",
        chosen_communities=[communities[1].pk],
    )
    assert page.status_code == 200 and not ApiKey.objects.exists()
    assert "You ticked 1 community under “All communities”" in page.content.decode()
    unrestricted = make_key(user=owner, scopes=["communities:read"]).key
    narrow = client.post(
        f"/integrations/api/keys/{unrestricted.pk}/narrow/",
        {
            "scopes": unrestricted.scopes,
            "limit_communities": "all",
            "chosen_communities": [communities[0].pk, communities[1].pk],
        },
    )
    assert narrow.status_code == 400
    assert "You ticked 2 communities under “All communities”" in narrow.content.decode()
    assert ApiKey.objects.get(pk=unrestricted.pk).restrictions == Restrictions()


def test_narrowing_a_limited_group_shows_its_objects_without_a_one_choice_toggle(
    client, owner, communities
):
    key = make_key(user=owner, restrictions=Restrictions(communities=(communities[0].pk,))).key
    page = client.get(f"/integrations/api/keys/{key.pk}/").content.decode()
    group = page.split('class="narrow-form"')[1].split('data-group="communities"')[1]
    group = group.split("</fieldset>")[0]
    assert 'type="hidden" name="limit_communities" value="selected"' in group
    assert "radio" not in group and "Only these<" not in group
    assert "Alpha" in group


def test_a_rate_limit_of_thousands_of_digits_is_a_form_error_not_a_500(client, owner):
    # int() of 5,000 digits raises (Python's own limit): found by the hostile sweep of issue 49.
    page = create(client, rate_limit="9" * 5000)
    assert page.status_code in (200, 400)
    assert "whole number a minute" in page.content.decode()
