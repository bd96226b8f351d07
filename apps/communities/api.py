"""The community API; member keys are welcome here and act as their member."""

from typing import Any

from django.http import HttpRequest, JsonResponse

from apps.api.errors import api_error
from apps.api.http import MAX_OBJECT_ID, BodyError, iso_time, json_object_body, methods
from apps.api.listing import list_limit
from apps.api_keys.auth import api_key_required
from apps.common.validation import InvalidInput

from .models import Community, Post
from .selectors import communities_for_key
from .services import post_create


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


def _community_or_none(request: HttpRequest, community_id: int) -> Community | None:
    """The community if the key may see it; another workspace's or a community the member is
    not in is treated exactly like one that does not exist."""
    if community_id > MAX_OBJECT_ID:
        return None
    return communities_for_key(request.api_key).filter(pk=community_id).first()


def _not_found() -> JsonResponse:
    return api_error("not-found", "No community with this id is visible to this key.")


@api_key_required(scope="communities:read", members=True)
def community_list(request: HttpRequest) -> JsonResponse:
    try:
        limit = list_limit(request)
    except InvalidInput as error:
        return api_error("invalid-input", error.message)
    communities = communities_for_key(request.api_key)[:limit]
    return JsonResponse({"data": [community_to_json(c) for c in communities]})


@api_key_required(scope="communities:read", members=True)
def post_list(request: HttpRequest, community_id: int) -> JsonResponse:
    community = _community_or_none(request, community_id)
    if community is None:
        return _not_found()
    try:
        limit = list_limit(request)
    except InvalidInput as error:
        return api_error("invalid-input", error.message)
    posts = Post.objects.filter(community=community).select_related("author")[:limit]
    return JsonResponse({"data": [post_to_json(p) for p in posts]})


@api_key_required(scope="communities:write", members=True)
def post_post(request: HttpRequest, community_id: int) -> JsonResponse:
    community = _community_or_none(request, community_id)
    if community is None:
        return _not_found()
    try:
        data = json_object_body(request, fields=("title", "body"))
        post = post_create(
            community=community, author=request.api_key.user, title=data["title"], body=data["body"]
        )
    except BodyError as error:
        return error.response
    except InvalidInput as error:
        return api_error("invalid-input", error.message)
    return JsonResponse(post_to_json(post), status=201)


communities = methods(GET=community_list)
posts = methods(GET=post_list, POST=post_post)
