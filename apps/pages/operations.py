"""Hosted pages: list_pages and create_page (GET and POST /pages)."""

from typing import Any

from apps.api.collections import collection_operations
from apps.api.http import iso_time
from apps.api.operations import Call, body_fields, object_schema
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


OPERATIONS = collection_operations(
    path="/pages",
    group="pages",
    item="page",
    plural="pages",
    record_name="Page",
    record=PAGE,
    body=PAGE_CREATE,
    list_run=_list,
    create_run=_create,
    list_summary="List the workspace's hosted pages, newest first.",
    create_summary=(
        "Create a hosted page with a title, a URL slug (lower-case letters, digits and "
        "dashes, unique in the workspace) and a body."
    ),
)
