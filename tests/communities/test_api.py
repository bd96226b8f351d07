import json

import pytest

from apps.api_keys.models import ApiKey
from apps.audit.services import Actor
from apps.communities.models import Post
from apps.communities.services import community_member_remove
from tests.conftest import auth
from tests.factories import make_community, make_key, member_of, owner_of

pytestmark = pytest.mark.django_db


def member_key(member, community, scopes=("communities:read", "communities:write")):
    return make_key(
        user=member, workspace=community.workspace, scopes=scopes, kind=ApiKey.Kind.MEMBER
    )


def post(client, secret, community_id, body):
    return client.post(
        f"/api/v1/communities/{community_id}/posts",
        json.dumps(body),
        content_type="application/json",
        **auth(secret),
    )


def test_member_key_lists_only_the_members_communities(client):
    mine = make_community(name="Mine")
    make_community(workspace=mine.workspace, name="Not mine")
    member = member_of(mine)
    names = [
        c["name"]
        for c in client.get("/api/v1/communities", **auth(member_key(member, mine).secret)).json()[
            "data"
        ]
    ]
    assert names == ["Mine"]


def test_workspace_key_lists_every_community_of_its_workspace(client):
    first = make_community(name="A")
    make_community(workspace=first.workspace, name="B")
    make_community(name="Elsewhere")
    created = make_key(user=owner_of(first.workspace), workspace=first.workspace)
    names = [
        c["name"] for c in client.get("/api/v1/communities", **auth(created.secret)).json()["data"]
    ]
    assert names == ["A", "B"]


def test_post_with_a_member_key_is_authored_by_the_member(client):
    community = make_community()
    member = member_of(community, email="maker@example.com")
    response = post(
        client,
        member_key(member, community).secret,
        community.pk,
        {"title": "Hello", "body": "First post\nwith two lines"},
    )
    assert response.status_code == 201
    assert response.json()["authorEmail"] == "maker@example.com"
    assert Post.objects.get().author == member


def test_post_with_a_workspace_key_is_authored_by_the_key_owner(client):
    community = make_community()
    owner = owner_of(community.workspace)
    created = make_key(user=owner, workspace=community.workspace)
    assert (
        post(client, created.secret, community.pk, {"title": "T", "body": "B"}).json()[
            "authorEmail"
        ]
        == owner.email
    )


def test_member_cannot_see_a_community_they_are_not_in(client):
    mine = make_community()
    other = make_community(workspace=mine.workspace, name="Other")
    member = member_of(mine)
    secret = member_key(member, mine).secret
    for response in (
        client.get(f"/api/v1/communities/{other.pk}/posts", **auth(secret)),
        post(client, secret, other.pk, {"title": "T", "body": "B"}),
    ):
        assert response.status_code == 404
        assert response.json()["error"] == "not-found"
    assert not Post.objects.exists()


def test_another_workspaces_community_is_not_found(client):
    theirs = make_community()
    mine = make_community()
    created = make_key(user=owner_of(mine.workspace), workspace=mine.workspace)
    response = client.get(f"/api/v1/communities/{theirs.pk}/posts", **auth(created.secret))
    assert response.status_code == 404


def test_removed_member_loses_access_at_once(client):
    community = make_community()
    member = member_of(community)
    secret = member_key(member, community).secret
    url = f"/api/v1/communities/{community.pk}/posts"
    assert client.get(url, **auth(secret)).status_code == 200
    community_member_remove(community=community, user=member, actor=Actor.of_operator("test"))
    assert client.get(url, **auth(secret)).json()["error"] == "revoked-key"
    assert client.get("/api/v1/communities", **auth(secret)).json()["error"] == "revoked-key"


def test_posts_list_newest_first(client):
    community = make_community()
    member = member_of(community)
    secret = member_key(member, community).secret
    for title in ("one", "two"):
        post(client, secret, community.pk, {"title": title, "body": "x"})
    titles = [
        p["title"]
        for p in client.get(f"/api/v1/communities/{community.pk}/posts", **auth(secret)).json()[
            "data"
        ]
    ]
    assert titles == ["two", "one"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"title": "", "body": "x"}, "title"),
        ({"title": "t", "body": "  "}, "body"),
        ({"title": "t", "body": "x" * 5001}, "body"),
        ({"title": "t", "body": "nul\x00"}, "body"),
        ({"title": "t"}, "body"),
        ({"title": "t", "body": "x", "author": "someone"}, "author"),
        ({"title": 5, "body": "x"}, "title"),
    ],
)
def test_invalid_posts_are_refused_naming_the_field(client, body, field):
    community = make_community()
    member = member_of(community)
    response = post(client, member_key(member, community).secret, community.pk, body)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid-input"
    assert field in response.json()["message"]
    assert not Post.objects.exists()


@pytest.mark.parametrize("community_id", ["99999999999999999999999", "0"])
def test_impossible_ids_are_not_found(client, community_id):
    created = make_key()
    response = client.get(f"/api/v1/communities/{community_id}/posts", **auth(created.secret))
    assert response.status_code == 404
