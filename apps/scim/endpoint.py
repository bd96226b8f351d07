"""The frame every SCIM answer goes through (RFC 7644): a SCIM token of the workspace first,
the methods the address takes, then the handler, whose refusals become RFC 7644 §3.12 errors
with their `scimType`; every answer `application/scim+json`, every request kept with its
outcome for the owners' page."""

import json
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from pydantic import ValidationError
from scim2_models import Context, Error, SCIMException

from apps.audit.services import Actor
from apps.common.http import client_ip

from .models import ScimRequest, ScimToken
from .provisioning import ScimRefusal
from .tokens import scim_token_authenticate

CONTENT_TYPE = "application/scim+json"
KEPT_REQUESTS = 100  # per workspace, for the settings page


class Answer:
    def __init__(self, status: int, body: dict[str, Any] | None, outcome: str = "") -> None:
        self.status, self.body, self.outcome = status, body, outcome


def _response(status: int, body: dict[str, Any] | None, **headers: str) -> HttpResponse:
    if body is None:
        response = HttpResponse(status=status)
    else:
        response = JsonResponse(body, status=status, content_type=CONTENT_TYPE)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def error_body(status: int, detail: str, scim_type: str | None = None) -> dict[str, Any]:
    error = Error(status=status, scim_type=scim_type, detail=detail)
    return error.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)


def location_of(path: str) -> str:
    return settings.SITE_URL.rstrip("/") + "/scim/v2" + path


def body_of(request: HttpRequest) -> Any:
    try:
        return json.loads(request.body or b"null")
    except RequestDataTooBig:
        raise ScimRefusal(413, None, "The request body is too large.") from None
    except (ValueError, UnicodeDecodeError):
        raise ScimRefusal(400, "invalidSyntax", "The request body is not JSON.") from None


def scim_endpoint(
    methods: tuple[str, ...],
) -> Callable[[Callable[..., Answer]], Callable[..., HttpResponse]]:
    """A SCIM view: a SCIM token of the workspace first, then `methods` (405 for others),
    then the handler, whose refusals become SCIM errors; the request is kept with its outcome."""

    def decorator(handler: Callable[..., Answer]) -> Callable[..., HttpResponse]:
        @csrf_exempt
        def view(request: HttpRequest, **kwargs: Any) -> HttpResponse:
            token = _token(request)
            if token is None:
                return _response(
                    401,
                    error_body(
                        401,
                        "Send a SCIM token: Authorization: Bearer gst_… (owners make one in "
                        "Settings → Single sign-on). API keys do not open SCIM.",
                    ),
                    WWW_Authenticate='Bearer realm="scim"',
                )
            if request.method not in methods:
                answer = Answer(405, error_body(405, f"{request.method} is not allowed here."))
            else:
                answer = _answer(handler, request, token, kwargs)
            _keep(request, token, answer)
            headers = {"Allow": ", ".join(methods)} if answer.status == 405 else {}
            return _response(answer.status, answer.body, **headers)

        return view

    return decorator


def _token(request: HttpRequest) -> ScimToken | None:
    scheme, _, raw = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return scim_token_authenticate(raw.strip())


def _answer(
    handler: Callable[..., Answer], request: HttpRequest, token: ScimToken, kwargs: Any
) -> Answer:
    try:
        return handler(request, token, **kwargs)
    except ScimRefusal as refusal:
        return Answer(refusal.status, error_body(refusal.status, refusal.detail, refusal.scim_type))
    except SCIMException as refused:
        error = refused.to_error()
        return Answer(
            int(error.status or 400), error.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
        )
    except ValidationError as invalid:
        error = Error.from_validation_errors(invalid)[0]
        return Answer(
            int(error.status or 400), error.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
        )


def _keep(request: HttpRequest, token: ScimToken, answer: Answer) -> None:
    """Keep the request and what it did (or why it was refused); the newest 100 stay."""
    outcome = answer.outcome or (
        str((answer.body or {}).get("detail", ""))
        if answer.status >= 400
        else ("Read" if request.method == "GET" else "Done")
    )
    workspace = token.workspace
    ScimRequest.objects.create(
        workspace=workspace,
        token=token,
        method=request.method or "",
        path=request.path[:200],
        status=answer.status,
        outcome=outcome[:300],
    )
    oldest_kept = (
        ScimRequest.objects.filter(workspace=workspace)
        .values_list("pk", flat=True)
        .order_by("-pk")[KEPT_REQUESTS - 1 : KEPT_REQUESTS]
    )
    if cutoff := list(oldest_kept):
        ScimRequest.objects.filter(workspace=workspace, pk__lt=cutoff[0]).delete()


def actor_of(request: HttpRequest, token: ScimToken) -> Actor:
    return Actor.of_identity_provider(token.name, client_ip(request))
