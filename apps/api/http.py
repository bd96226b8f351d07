"""Request plumbing of the JSON API: method routing and body parsing."""

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from .errors import ApiFailure, api_error


def methods(**handlers: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """One view for a path that dispatches on the method, answering 405 with Allow otherwise.

    Routing comes before authentication, so a wrong method is refused without looking at the key.
    """
    allow = ", ".join(handlers)

    @csrf_exempt
    def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        handler = handlers.get(request.method or "")
        if handler is None:
            return api_error(
                "method-not-allowed",
                f"{request.method} is not allowed here; use {allow}.",
                Allow=allow,
            )
        return handler(request, *args, **kwargs)

    return view


# One encoder for every answer: encoding keeps no state in it, and JsonResponse would build one
# a call.
_encode_json = DjangoJSONEncoder().encode


def json_answer(data: Any, status: int = 200) -> HttpResponse:
    """`data` as a JSON answer: the same bytes and Content-Type as Django's JsonResponse."""
    return HttpResponse(_encode_json(data).encode(), status=status, content_type="application/json")


def _is_json(content_type: str) -> bool:
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type == "application/json"


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise ValueError("duplicate key")
    return result


def request_body_bytes(request: HttpRequest) -> bytes:
    """The raw body, or ApiFailure 413 when it is over the limit (declared or actual)."""
    limit = settings.API_MAX_BODY_BYTES
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        raise _too_large(limit)
    try:
        body = request.body
    except RequestDataTooBig:
        raise _too_large(limit) from None
    if len(body) > limit:
        raise _too_large(limit)
    return body


def _too_large(limit: int) -> ApiFailure:
    return ApiFailure("payload-too-large", f"The request body must be at most {limit} bytes.")


def json_body(request: HttpRequest) -> Any:
    """The request's JSON body, or ApiFailure with the 413, 415 or 400 to send."""
    body = request_body_bytes(request)
    if body and not _is_json(request.META.get("CONTENT_TYPE", "")):
        raise ApiFailure("unsupported-media-type")
    try:
        return json.loads(
            body.decode("utf-8"),
            parse_constant=_reject_constant,
            object_pairs_hook=_no_duplicate_keys,
        )
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ApiFailure("invalid-input", "The request body must be a valid JSON object.") from None


def iso_time(moment: datetime) -> str:
    """A UTC timestamp as the API writes it: ISO 8601 with a Z."""
    return moment.isoformat().replace("+00:00", "Z")
