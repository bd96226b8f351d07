"""Hosted pages: list_pages and create_page (GET and POST /pages)."""

from typing import Any

from apps.api.http import iso_time
from apps.api.operations import (
    LIMIT,
    Call,
    Needs,
    Operation,
    body_fields,
    list_schema,
    object_schema,
)
from apps.api.schemas import date_time, long_text, single_line_text
from apps.api_keys.choosable import limited_to_key, note_reached

from .models import Page
from .services import BODY_MAX_LENGTH, page_create


def page_to_json(page: Page) -> dict[str, Any]:
    return {
        "id": page.pk,
        "title": page.title,
        "slug": page.slug,
        "body": page.body,
        "createdAt": iso_time(page.created_at),
    }


PAGE = object_schema(
    {
        "id": {"type": "integer"},
        "title": {"type": "string"},
        "slug": {"type": "string"},
        "body": {"type": "string"},
        "createdAt": date_time(),
    }
)
PAGE_CREATE = object_schema(
    {
        "title": single_line_text(200),
        "slug": {
            "type": "string",
            "pattern": "^[a-z0-9]+(?:-[a-z0-9]+)*$",
            "maxLength": 100,
            "description": "Unique in the workspace; a used slug is refused (invalid-input).",
        },
        "body": long_text(BODY_MAX_LENGTH, required=False),
    }
)


def _list(call: Call, params: dict[str, int], body: Any) -> dict[str, Any]:
    pages = Page.objects.filter(workspace=call.workspace)
    shown = list(limited_to_key(pages, call.key, "pages")[: params["limit"]])
    note_reached(call.key, "pages", [p.pk for p in shown])
    return {"data": [page_to_json(p) for p in shown]}


def _create(call: Call, params: dict[str, int], body: Any) -> dict[str, Any]:
    data = body_fields(body, PAGE_CREATE)
    page = page_create(
        workspace=call.workspace, title=data["title"], slug=data["slug"], body=data["body"]
    )
    return page_to_json(page)


OPERATIONS = (
    Operation(
        name="list_pages",
        method="GET",
        path="/pages",
        needs=Needs(scope="pages:read"),
        title="List pages",
        summary="List the workspace's hosted pages, newest first.",
        output_name="PageList",
        output=list_schema(PAGE),
        params=(LIMIT,),
        run=_list,
    ),
    Operation(
        name="create_page",
        method="POST",
        path="/pages",
        needs=Needs(scope="pages:write", creates="pages"),
        title="Create a page",
        summary=(
            "Create a hosted page with a title, a URL slug (lower-case letters, digits and "
            "dashes, unique in the workspace) and a body."
        ),
        output_name="Page",
        output=PAGE,
        body_name="PageCreate",
        body=PAGE_CREATE,
        status=201,
        run=_create,
    ),
)
