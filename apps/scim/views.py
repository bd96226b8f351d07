"""SCIM's Users (RFC 7644 §3.2–3.6): the workspace's team as its identity provider reads and
writes it. Parsing, PATCH and the response's attributes are scim2-models'; what a write does
to the team is provisioning.py's."""

from typing import Any

from django.db import transaction
from django.http import HttpRequest
from scim2_models import Context, ListResponse, PatchOp, SearchRequest, User

from .discovery import MAX_PAGE_SIZE
from .endpoint import Answer, actor_of, body_of, location_of, scim_endpoint
from .models import ScimToken
from .provisioning import ScimRefusal, user_provision, user_remove, user_write
from .users import POLICY, filter_condition, membership_to_user, team_of

# The core User with no extension: its class, where scim2-models takes it as a type argument.
PlainUser: Any = User
_QUERY = ("filter", "startIndex", "count", "attributes", "excludedAttributes")


def _dump(user: "User[Any]", context: Context, parameters: Any = None) -> dict[str, Any]:
    return user.model_dump(scim_ctx=context, response_parameters=parameters)


def _page(token: ScimToken, search: Any, filter_text: str | None) -> Answer:
    team = team_of(token.workspace)
    if filter_text:
        team = team.filter(filter_condition(filter_text))
    start = max(search.start_index or 1, 1)
    count = MAX_PAGE_SIZE if search.count is None else min(search.count, MAX_PAGE_SIZE)
    total = team.count()
    members = list(team[start - 1 : start - 1 + count]) if count else []
    users = [membership_to_user(m, location_of(f"/Users/{m.pk}")) for m in members]
    listing = ListResponse[PlainUser](
        total_results=total, start_index=start, items_per_page=len(users), resources=users
    )
    return Answer(
        200, listing.model_dump(scim_ctx=Context.SEARCH_RESPONSE, response_parameters=search)
    )


@scim_endpoint(("GET", "POST"))
def users_view(request: HttpRequest, token: ScimToken) -> Answer:
    if request.method == "GET":
        query = {name: request.GET[name] for name in _QUERY if name in request.GET}
        search = SearchRequest[PlainUser].model_validate(query, scim_ctx=Context.SEARCH_REQUEST)
        return _page(token, search, query.get("filter"))
    user = PlainUser.model_validate(
        body_of(request), scim_ctx=Context.RESOURCE_CREATION_REQUEST, scim_policy=POLICY
    )
    outcome = user_provision(workspace=token.workspace, user=user, actor=actor_of(request, token))
    created = membership_to_user(outcome.membership, location_of(f"/Users/{outcome.membership.pk}"))
    return Answer(201, _dump(created, Context.RESOURCE_CREATION_RESPONSE), outcome.summary)


@scim_endpoint(("POST",))
def search_view(request: HttpRequest, token: ScimToken) -> Answer:
    body = body_of(request)
    search = SearchRequest[PlainUser].model_validate(body, scim_ctx=Context.SEARCH_REQUEST)
    return _page(token, search, body.get("filter") if isinstance(body, dict) else None)


def _member(token: ScimToken, user_id: str) -> Any:
    member = team_of(token.workspace).filter(pk=int(user_id)).first() if user_id.isdigit() else None
    if member is None:
        raise ScimRefusal(404, None, f"No user {user_id!r} on this workspace's team.")
    return member


@scim_endpoint(("GET", "PUT", "PATCH", "DELETE"))
def user_view(request: HttpRequest, token: ScimToken, user_id: str) -> Answer:
    member, actor = _member(token, user_id), actor_of(request, token)
    location = location_of(f"/Users/{member.pk}")
    if request.method == "GET":
        query = {name: request.GET[name] for name in _QUERY[3:] if name in request.GET}
        search = SearchRequest[PlainUser].model_validate(query, scim_ctx=Context.SEARCH_REQUEST)
        user = membership_to_user(member, location)
        return Answer(200, _dump(user, Context.RESOURCE_QUERY_RESPONSE, search))
    if request.method == "DELETE":
        outcome = user_remove(membership=member, actor=actor)
        return Answer(204, None, outcome.summary)
    body = body_of(request)
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
    return Answer(200, _dump(membership_to_user(written, location), context), outcome.summary)
