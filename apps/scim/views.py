"""SCIM 2.0 at /scim/v2/ (RFC 7644): the discovery documents and the Users of a workspace's
team, for its identity provider, authenticated by a SCIM token (docs/product.md §16).

Every answer is `application/scim+json`; every refusal an RFC 7644 §3.12 error with its
`scimType` where one applies. Each request is kept, with its outcome, for the owners' page.
"""

import json
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from pydantic import ValidationError
from scim2_models import (
    AuthenticationScheme,
    Bulk,
    ChangePassword,
    Context,
    Error,
    ETag,
    Filter,
    ListResponse,
    Patch,
    PatchOp,
    ResourceType,
    SCIMException,
    SearchRequest,
    ServiceProviderConfig,
    Sort,
    User,
)

from apps.audit.services import Actor
from apps.common.http import client_ip

from .models import ScimRequest, ScimToken
from .provisioning import ScimRefusal, user_provision, user_remove, user_write
from .tokens import scim_token_authenticate
from .users import POLICY, USER_SCHEMA, filter_condition, membership_to_user, team_of, user_schema

# The core User with no extension: its class, where scim2-models takes it as a type argument.
PlainUser: Any = User
CONTENT_TYPE = "application/scim+json"
MAX_PAGE_SIZE = 200  # a page, when the provider asks for none or more
KEPT_REQUESTS = 100  # per workspace, for the settings page
_QUERY = ("filter", "startIndex", "count", "attributes", "excludedAttributes")


class _Answer:
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


def _error(status: int, detail: str, scim_type: str | None = None) -> dict[str, Any]:
    error = Error(status=status, scim_type=scim_type, detail=detail)
    return error.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)


def _location(path: str) -> str:
    return settings.SITE_URL.rstrip("/") + "/scim/v2" + path


def _body(request: HttpRequest) -> Any:
    try:
        return json.loads(request.body or b"null")
    except RequestDataTooBig:
        raise ScimRefusal(413, None, "The request body is too large.") from None
    except (ValueError, UnicodeDecodeError):
        raise ScimRefusal(400, "invalidSyntax", "The request body is not JSON.") from None


def scim_endpoint(
    methods: tuple[str, ...],
) -> Callable[[Callable[..., _Answer]], Callable[..., HttpResponse]]:
    """A SCIM view: a SCIM token of the workspace first, then `methods` (405 for others),
    then the handler, whose refusals become SCIM errors; the request is kept with its outcome."""

    def decorator(handler: Callable[..., _Answer]) -> Callable[..., HttpResponse]:
        @csrf_exempt
        def view(request: HttpRequest, **kwargs: Any) -> HttpResponse:
            token = _token(request)
            if token is None:
                return _response(
                    401,
                    _error(
                        401,
                        "Send a SCIM token: Authorization: Bearer gst_… (owners make one in "
                        "Settings → Identity provider). API keys do not open SCIM.",
                    ),
                    WWW_Authenticate='Bearer realm="scim"',
                )
            if request.method not in methods:
                answer = _Answer(405, _error(405, f"{request.method} is not allowed here."))
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
    handler: Callable[..., _Answer], request: HttpRequest, token: ScimToken, kwargs: Any
) -> _Answer:
    try:
        return handler(request, token, **kwargs)
    except ScimRefusal as refusal:
        return _Answer(refusal.status, _error(refusal.status, refusal.detail, refusal.scim_type))
    except SCIMException as refused:
        error = refused.to_error()
        return _Answer(
            int(error.status or 400), error.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
        )
    except ValidationError as invalid:
        error = Error.from_validation_errors(invalid)[0]
        return _Answer(
            int(error.status or 400), error.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)
        )


def _keep(request: HttpRequest, token: ScimToken, answer: _Answer) -> None:
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


def _actor(request: HttpRequest, token: ScimToken) -> Actor:
    return Actor.of_identity_provider(token.name, client_ip(request))


# Discovery (RFC 7644 §4): what Gatehouse offers; no Groups, no bulk, no sorting, no ETags.


def service_provider_config() -> ServiceProviderConfig:
    return ServiceProviderConfig(
        patch=Patch(supported=True),
        bulk=Bulk(supported=False, max_operations=0, max_payload_size=0),
        filter=Filter(supported=True, max_results=MAX_PAGE_SIZE),
        change_password=ChangePassword(supported=False),
        sort=Sort(supported=False),
        etag=ETag(supported=False),
        authentication_schemes=[
            AuthenticationScheme(
                type=AuthenticationScheme.Type.oauthbearertoken,
                name="SCIM token",
                description="A SCIM token (gst_…) an owner made in Settings → Identity provider, "
                "sent as Authorization: Bearer.",
                primary=True,
            )
        ],
    )


def _user_resource_type() -> dict[str, Any]:
    resource = ResourceType.from_resource(User)
    resource.description = "The workspace's owners and admins. Groups are not offered."
    return resource.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)


def _schema() -> dict[str, Any]:
    return user_schema().model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE)


def _listing(resources: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:ListResponse"],
        "totalResults": len(resources),
        "startIndex": 1,
        "itemsPerPage": len(resources),
        "Resources": resources,
    }


@scim_endpoint(("GET",))
def provider_config_view(request: HttpRequest, token: ScimToken) -> _Answer:
    config = service_provider_config()
    return _Answer(200, config.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE))


@scim_endpoint(("GET",))
def resource_types_view(request: HttpRequest, token: ScimToken, name: str = "") -> _Answer:
    if not name:
        return _Answer(200, _listing([_user_resource_type()]))
    if name != "User":
        raise ScimRefusal(404, None, f"No resource type {name!r}: Gatehouse offers User only.")
    return _Answer(200, _user_resource_type())


@scim_endpoint(("GET",))
def schemas_view(request: HttpRequest, token: ScimToken, urn: str = "") -> _Answer:
    if not urn:
        return _Answer(200, _listing([_schema()]))
    if urn != USER_SCHEMA:
        raise ScimRefusal(404, None, f"No schema {urn!r}: Gatehouse offers {USER_SCHEMA} only.")
    return _Answer(200, _schema())


@scim_endpoint(("GET", "POST", "PUT", "PATCH", "DELETE"))
def not_found_view(request: HttpRequest, token: ScimToken, rest: str = "") -> _Answer:
    raise ScimRefusal(404, None, "Nothing is at this address: SCIM here offers /Users only.")


# Users (RFC 7644 §3.2–3.6).


def _dump(user: "User[Any]", context: Context, parameters: Any = None) -> dict[str, Any]:
    return user.model_dump(scim_ctx=context, response_parameters=parameters)


def _page(token: ScimToken, search: Any, filter_text: str | None) -> _Answer:
    team = team_of(token.workspace)
    if filter_text:
        team = team.filter(filter_condition(filter_text))
    start = max(search.start_index or 1, 1)
    count = MAX_PAGE_SIZE if search.count is None else min(search.count, MAX_PAGE_SIZE)
    total = team.count()
    members = list(team[start - 1 : start - 1 + count]) if count else []
    users = [membership_to_user(m, _location(f"/Users/{m.pk}")) for m in members]
    listing = ListResponse[PlainUser](
        total_results=total, start_index=start, items_per_page=len(users), resources=users
    )
    return _Answer(
        200, listing.model_dump(scim_ctx=Context.SEARCH_RESPONSE, response_parameters=search)
    )


@scim_endpoint(("GET", "POST"))
def users_view(request: HttpRequest, token: ScimToken) -> _Answer:
    if request.method == "GET":
        query = {name: request.GET[name] for name in _QUERY if name in request.GET}
        search = SearchRequest[PlainUser].model_validate(query, scim_ctx=Context.SEARCH_REQUEST)
        return _page(token, search, query.get("filter"))
    user = PlainUser.model_validate(
        _body(request), scim_ctx=Context.RESOURCE_CREATION_REQUEST, scim_policy=POLICY
    )
    outcome = user_provision(workspace=token.workspace, user=user, actor=_actor(request, token))
    created = membership_to_user(outcome.membership, _location(f"/Users/{outcome.membership.pk}"))
    return _Answer(201, _dump(created, Context.RESOURCE_CREATION_RESPONSE), outcome.summary)


@scim_endpoint(("POST",))
def search_view(request: HttpRequest, token: ScimToken) -> _Answer:
    body = _body(request)
    search = SearchRequest[PlainUser].model_validate(body, scim_ctx=Context.SEARCH_REQUEST)
    return _page(token, search, body.get("filter") if isinstance(body, dict) else None)


def _member(token: ScimToken, user_id: str) -> Any:
    member = team_of(token.workspace).filter(pk=int(user_id)).first() if user_id.isdigit() else None
    if member is None:
        raise ScimRefusal(404, None, f"No user {user_id!r} on this workspace's team.")
    return member


@scim_endpoint(("GET", "PUT", "PATCH", "DELETE"))
def user_view(request: HttpRequest, token: ScimToken, user_id: str) -> _Answer:
    member, actor = _member(token, user_id), _actor(request, token)
    location = _location(f"/Users/{member.pk}")
    if request.method == "GET":
        query = {name: request.GET[name] for name in _QUERY[3:] if name in request.GET}
        search = SearchRequest[PlainUser].model_validate(query, scim_ctx=Context.SEARCH_REQUEST)
        user = membership_to_user(member, location)
        return _Answer(200, _dump(user, Context.RESOURCE_QUERY_RESPONSE, search))
    if request.method == "DELETE":
        outcome = user_remove(membership=member, actor=actor)
        return _Answer(204, None, outcome.summary)
    body = _body(request)
    with transaction.atomic():  # read, change and write the record under one lock
        member = team_of(token.workspace).select_for_update(of=("self",)).get(pk=member.pk)
        if request.method == "PUT":
            user = PlainUser.model_validate(
                body, scim_ctx=Context.RESOURCE_REPLACEMENT_REQUEST, scim_policy=POLICY
            )
            context = Context.RESOURCE_REPLACEMENT_RESPONSE
        else:
            patch = PatchOp[PlainUser].model_validate(
                body, scim_ctx=Context.RESOURCE_PATCH_REQUEST, scim_policy=POLICY
            )
            user = membership_to_user(member, location)
            patch.patch(user, scim_policy=POLICY)
            context = Context.RESOURCE_PATCH_RESPONSE
        outcome = user_write(membership=member, user=user, actor=actor)
    written = team_of(token.workspace).get(pk=member.pk)
    return _Answer(200, _dump(membership_to_user(written, location), context), outcome.summary)
