"""The HTTP door: /api/v1 routes built from the operations list.

Every handler runs the same steps in the order of docs/product.md §3.1: routing (404, 405, by the
URL patterns and `methods`), a credential in the query string (400), authentication (401, 429),
authorization (403), parameters and body (400, 413, 415), then the operation itself.
"""

import re
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, path, re_path

from apps.api.door_steps import (
    REFUSED,
    object_of,
    operation_run,
    refusal_of,
    refuse_query_credentials,
)
from apps.api.errors import ApiFailure, api_error
from apps.api.http import json_answer, json_body, methods, request_body_bytes
from apps.api.operations import Call, NotFound, Operation
from apps.api.views import not_found
from apps.api_keys.auth import api_key_authorize, api_key_from_request, rate_limit_headers
from apps.audit.services import Actor
from apps.common.validation import InvalidInput
from apps.leaks.reports import ReportRefused, leak_report_handle
from apps.metering.facts import request_facts

from .openapi import served_openapi
from .operations import OPERATIONS

app_name = "api"


def http_handler(op: Operation) -> Callable[..., HttpResponse]:
    """The view of one operation for one method."""

    def handler(request: HttpRequest, **path_params: str) -> HttpResponse:
        facts = request_facts(request)
        facts.operation = op.name
        try:
            refuse_query_credentials(request)
            key = api_key_from_request(request)
            facts.workspace_id = key.workspace_id
            api_key_authorize(key, op.needs)
            call = Call(key=key, workspace=key.workspace, actor=Actor.of_key(key, facts.client_ip))
            raw: dict[str, Any] = {
                p.name: request.GET[p.name] for p in op.params if p.name in request.GET
            }
            for name, value in path_params.items():
                param = next(p for p in op.params if p.name == name)
                try:
                    raw[name] = param.clean(value)
                except InvalidInput:
                    raise NotFound("Nothing was found at this address.") from None
            facts.object_id = object_of(op, raw)
            body = json_body(request) if op.body is not None else None
            record = operation_run(op, call, raw, body)
            facts.object_id = object_of(op, raw, record)
            if op.status == 204:
                response = HttpResponse(status=204)
            else:
                response = json_answer(record, op.status)
        except REFUSED as error:
            response = refusal_of(error).response()
        return rate_limit_headers(request, response)

    handler.__name__ = op.name
    return handler


def secret_scanning_report(request: HttpRequest) -> HttpResponse:
    """GitHub's secret-scanning partner endpoint: authenticated by its signature, not a key."""
    try:
        body = request_body_bytes(request)
        answer = leak_report_handle(
            body,
            request.headers.get("Github-Public-Key-Identifier", ""),
            request.headers.get("Github-Public-Key-Signature", ""),
        )
    except ApiFailure as failure:
        return failure.response()
    except ReportRefused as refused:
        return api_error(refused.reason, refused.message)
    return JsonResponse(answer, safe=False)


def _django_route(openapi_path: str) -> str:
    # Path parameters are ids: a non-number is an unknown path (404) before any key is read.
    return re.sub(r"\{(\w+)\}", r"<int:\1>", openapi_path.lstrip("/"))


def _route_name(api_path: str) -> str:
    """`/communities/{communityId}/posts` is named `posts`: its last fixed segment;
    `/keys/{keyId}`, which ends in a parameter, is `keys-detail`."""
    name = [part for part in api_path.split("/") if part and "{" not in part][-1]
    return name + "-detail" if api_path.endswith("}") else name


def _openapi(request: HttpRequest) -> HttpResponse:
    return HttpResponse(served_openapi(), content_type="application/json")


def _api_urlpatterns() -> list[URLPattern]:
    by_path: dict[str, dict[str, Callable[..., HttpResponse]]] = defaultdict(dict)
    for op in OPERATIONS:
        by_path[op.path][op.method] = http_handler(op)
    patterns = [
        path("v1/" + _django_route(api_path), methods(**handlers), name=_route_name(api_path))
        for api_path, handlers in by_path.items()
    ]
    return [
        *patterns,
        path("v1/openapi.json", methods(GET=_openapi), name="openapi"),
        path(
            "v1/secret-scanning/reports",
            methods(POST=secret_scanning_report),
            name="secret_scanning_reports",
        ),
        re_path(r"^(?P<rest>.*)$", not_found),
    ]


urlpatterns = _api_urlpatterns()
