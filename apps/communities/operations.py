"""Communities and posts; member keys are welcome here and act as their member."""

from typing import Any

from apps.api.collections import collection_operations
from apps.api.http import iso_time
from apps.api.operations import (
    LIMIT,
    Call,
    Needs,
    NotFound,
    Operation,
    Param,
    body_fields,
    list_schema,
    object_schema,
)
from apps.api.schemas import date_time, long_text, single_line_text
from apps.api_keys.choosable import note_reached

from .models import Community, Post
from .selectors import communities_for_key
from .services import POST_BODY_MAX_LENGTH, post_create


def community_to_json(community: Community) -> dict[str, Any]:
    return {
        "id": community.pk,
        "name": community.name,
        "createdAt": iso_time(community.created_at),
    }


def post_to_json(post: Post) -> dict[str, Any]:
    return {
        "id": post.pk,
        "communityId": post.community_id,
        "title": post.title,
        "body": post.body,
        "authorEmail": post.author.email,
        "createdAt": iso_time(post.created_at),
    }


COMMUNITY = object_schema(
    {"id": {"type": "integer"}, "name": {"type": "string"}, "createdAt": date_time()}
)
POST = object_schema(
    {
        "id": {"type": "integer"},
        "communityId": {"type": "integer"},
        "title": {"type": "string"},
        "body": {"type": "string"},
        "authorEmail": {"type": "string", "format": "email"},
        "createdAt": date_time(),
    }
)
POST_CREATE = object_schema(
    {"title": single_line_text(200), "body": long_text(POST_BODY_MAX_LENGTH)}
)
COMMUNITY_ID = Param("communityId", "path", "The community's id, as list_communities gives it.")


def _community(call: Call, params: dict[str, int]) -> Community:
    """The community if the key may see it; another workspace's, or a community the member is
    not in, is treated exactly like one that does not exist."""
    community = communities_for_key(call.key).filter(pk=params["communityId"]).first()
    if community is None:
        raise NotFound("No community with this id is visible to this key.")
    note_reached(call.key, "communities", [community.pk])
    return community


def _list_communities(call: Call, params: dict[str, int], body: Any) -> dict[str, Any]:
    communities = list(communities_for_key(call.key)[: params["limit"]])
    note_reached(call.key, "communities", [c.pk for c in communities])
    return {"data": [community_to_json(c) for c in communities]}


def _list_posts(call: Call, params: dict[str, int], body: Any) -> dict[str, Any]:
    community = _community(call, params)
    posts = Post.objects.filter(community=community).select_related("author")[: params["limit"]]
    return {"data": [post_to_json(p) for p in posts]}


def _create_post(call: Call, params: dict[str, int], body: Any) -> dict[str, Any]:
    community = _community(call, params)
    data = body_fields(body, POST_CREATE)
    post = post_create(
        community=community, author=call.key.user, title=data["title"], body=data["body"]
    )
    return post_to_json(post)


OPERATIONS = (
    Operation(
        name="list_communities",
        method="GET",
        path="/communities",
        needs=Needs(scope="communities:read", members=True),
        title="List communities",
        summary=(
            "List communities, newest first: all of the workspace's, or with a member key the "
            "communities its member belongs to. Their ids are what list_posts and create_post "
            "take."
        ),
        output_name="CommunityList",
        output=list_schema(COMMUNITY),
        params=(LIMIT,),
        run=_list_communities,
    ),
    *collection_operations(
        path="/communities/{communityId}/posts",
        group="communities",
        item="post",
        plural="posts",
        record_name="Post",
        record=POST,
        body=POST_CREATE,
        list_run=_list_posts,
        create_run=_create_post,
        list_title="List a community's posts",
        create_title="Post in a community",
        list_summary="List the posts of one community, newest first.",
        create_summary=(
            "Publish a post (a title and a body) in a community. The author is the key's "
            "holder: with a member key, that member."
        ),
        params=(COMMUNITY_ID,),
        members=True,
        limited_create=False,
    ),
)
