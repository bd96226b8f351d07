import re

import pytest

from apps.api_keys.models import ApiKey
from tests.conftest import auth
from tests.factories import make_community, make_key, member_of, owner_of

pytestmark = pytest.mark.django_db
DEVELOPER = "/portal/settings/developer/"


@pytest.fixture
def community():
    return make_community(name="Makers")


@pytest.fixture
def member(client, community):
    user = member_of(community, email="maker@example.com")
    client.force_login(user)
    return user


def create(client, **overrides):
    page = client.get(DEVELOPER + "new/").content.decode()
    token = re.search(r'name="form_token" value="([^"]+)"', page).group(1)
    data = {
        "name": "My script",
        "expiry": "90",
        "scopes": ["communities:read"],
        "form_token": token,
    }
    data.update(overrides)
    return client.post(DEVELOPER + "new/", data)


def test_member_lands_on_the_portal_with_their_communities(client, member, community):
    make_community(workspace=community.workspace, name="Secret club")
    page = client.get(client.get("/")["Location"]).content.decode()
    assert "Makers" in page and "Secret club" not in page
    assert "Your API keys" in page


def test_create_form_offers_communities_only(client, member):
    page = client.get(DEVELOPER + "new/").content.decode()
    assert 'name="access_communities"' in page
    assert "access_products" not in page and "access_pages" not in page


def test_member_creates_a_member_key_that_works_on_communities_only(client, member):
    response = create(client, scopes=["communities:read", "communities:write"])
    secret = re.search(r'data-testid="new-secret">([^<]+)<', response.content.decode()).group(1)
    assert secret.startswith("gmk_")
    assert "no-store" in response["Cache-Control"]
    key = ApiKey.objects.get()
    assert (key.kind, key.user) == ("member", member)
    assert client.get("/api/v1/communities", **auth(secret)).status_code == 200
    assert client.get("/api/v1/workspace", **auth(secret)).status_code == 403


def test_member_cannot_sneak_in_a_workspace_scope(client, member):
    response = create(client, scopes=["products:read"])
    assert "Select a valid choice" in response.content.decode()
    assert not ApiKey.objects.exists()


def test_member_sees_and_revokes_only_their_own_keys(client, member, community):
    other = member_of(community)
    theirs = make_key(
        user=other,
        workspace=community.workspace,
        scopes=["communities:read"],
        kind=ApiKey.Kind.MEMBER,
        name="Other member's key",
    )
    owners = make_key(
        user=owner_of(community.workspace), workspace=community.workspace, name="Owner key"
    )
    mine = make_key(
        user=member,
        workspace=community.workspace,
        scopes=["communities:read"],
        kind=ApiKey.Kind.MEMBER,
        name="Mine",
    )
    page = client.get(DEVELOPER).content.decode()
    assert "Mine" in page and "Other member" not in page and "Owner key" not in page
    for key in (theirs.key, owners.key):
        assert client.post(f"{DEVELOPER}keys/{key.pk}/revoke/").status_code == 404
    response = client.post(f"{DEVELOPER}keys/{mine.key.pk}/revoke/", HTTP_HX_REQUEST="true")
    assert ">Revoked<" in response.content.decode()
    assert client.get("/api/v1/communities", **auth(mine.secret)).status_code == 401
    assert ApiKey.objects.filter(revoked_at__isnull=False).count() == 1


def test_member_never_sees_the_owner_dashboard(client, member):
    for url in ("/integrations/api/", "/integrations/api/new/", "/settings/", "/communities/"):
        assert client.get(url).status_code == 403


def test_owner_sees_member_keys_marked_and_can_revoke_them(client, community):
    member = member_of(community)
    created = make_key(
        user=member,
        workspace=community.workspace,
        scopes=["communities:read"],
        kind=ApiKey.Kind.MEMBER,
        name="Member script",
    )
    owner = owner_of(community.workspace)
    client.force_login(owner)
    page = client.get("/integrations/api/").content.decode()
    assert "Member script" in page and "Member key" in page
    client.post(f"/integrations/api/keys/{created.key.pk}/revoke/")
    assert (
        client.get("/api/v1/communities", **auth(created.secret)).json()["error"] == "revoked-key"
    )


def test_owners_are_not_in_the_portal(client, community):
    client.force_login(owner_of(community.workspace))
    assert client.get("/portal/").status_code == 403


def test_anonymous_visitor_is_sent_to_sign_in(client):
    assert client.get(DEVELOPER)["Location"].startswith("/sign-in/")


def test_the_portal_key_list_has_no_holder_column(client, member, community):
    from apps.api_keys.models import ApiKey
    from tests.factories import make_key

    make_key(
        user=member,
        workspace=community.workspace,
        scopes=["communities:read"],
        kind=ApiKey.Kind.MEMBER,
    )
    page = client.get("/portal/settings/developer/").content.decode()
    assert "<th>Holder</th>" not in page and 'data-label="Holder"' not in page
    assert "Community ID for the API" in client.get("/portal/").content.decode()


def test_a_members_first_key_starts_at_read_and_a_refusal_sits_by_its_choice(client, member):
    page = client.get(DEVELOPER + "new/").content.decode()
    checked = re.findall(
        r'<input[^>]*name="access_communities"[^>]*value="(\w+)"[^>]*checked', page
    )
    assert checked == ["read"]  # not None: the only group starts where a key is useful
    refused = create(client, access_communities="none").content.decode()
    message = "Choose a permission: Read, Write or Read &amp; write."
    assert message in refused
    # Beside the permissions, not at the top of the form.
    assert refused.index(message) > refused.index('name="access_communities"')


def test_the_portal_tells_members_to_export_a_member_key(client, member, community):
    page = client.get("/portal/settings/developer/").content.decode()
    assert "export GATEHOUSE_API_KEY=gmk_…" in page and "gwk_" not in page
