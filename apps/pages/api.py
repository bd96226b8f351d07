"""GET and POST /api/v1/pages."""

from typing import Any

from django.http import HttpRequest, JsonResponse

from apps.api.errors import api_error
from apps.api.http import BodyError, iso_time, json_object_body, methods
from apps.api.listing import list_limit
from apps.api_keys.auth import api_key_required
from apps.common.validation import InvalidInput

from .models import Page
from .services import page_create


def page_to_json(page: Page) -> dict[str, Any]:
    return {
        "id": page.pk,
        "title": page.title,
        "slug": page.slug,
        "body": page.body,
        "createdAt": iso_time(page.created_at),
    }


@api_key_required(scope="pages:read")
def page_list(request: HttpRequest) -> JsonResponse:
    try:
        limit = list_limit(request)
    except InvalidInput as error:
        return api_error("invalid-input", error.message)
    pages = Page.objects.filter(workspace=request.workspace)[:limit]
    return JsonResponse({"data": [page_to_json(p) for p in pages]})


@api_key_required(scope="pages:write")
def page_post(request: HttpRequest) -> JsonResponse:
    try:
        data = json_object_body(request, fields=("title", "slug", "body"))
        page = page_create(
            workspace=request.workspace, title=data["title"], slug=data["slug"], body=data["body"]
        )
    except BodyError as error:
        return error.response
    except InvalidInput as error:
        return api_error("invalid-input", error.message)
    return JsonResponse(page_to_json(page), status=201)


pages = methods(GET=page_list, POST=page_post)
