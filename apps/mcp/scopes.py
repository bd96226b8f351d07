"""Scopes at the MCP door, by the MCP authorization specification (2025-11-25): the 401 that
names where to sign in and what to ask for, and for connected apps (keys tagged MCP) the
scope challenge that lets their client ask the person for one more scope (step-up)."""

import mcp_types as types
from django.http import HttpRequest, HttpResponse

from apps.api.errors import api_error
from apps.api.operations import Needs, Operation
from apps.api.scopes import ALL_SCOPES, MEMBER_SCOPES
from apps.api_keys.auth import key_may, needed_scopes
from apps.api_keys.models import ApiKey
from apps.oauth.metadata import resource_metadata_url


def grantable_scopes(key: ApiKey) -> tuple[str, ...]:
    """What a connected app may ask the person for on this key's behalf: the API's scopes
    for a workspace key, the community scopes for a member key (never the keys scopes)."""
    return MEMBER_SCOPES if key.kind == ApiKey.Kind.MEMBER else ALL_SCOPES


def step_up_scopes(key: ApiKey, needs: Needs) -> tuple[str, ...] | None:
    """For a connected app's key (tag MCP) that lacks the scope a tool needs, the scopes to
    ask the person for: those it holds and the one missing (MCP authorization, "scope
    challenge"). None when a new sign-in could not help: a pasted key, a tool it may already
    call, or one this kind of key can never hold."""
    if key.tag != ApiKey.Tag.MCP or key_may(key, needs):
        return None
    if key.kind == ApiKey.Kind.MEMBER and not needs.members:
        return None
    missing = [s for s in needed_scopes(needs) if s in grantable_scopes(key)]
    if not missing:
        return None
    # A tool that takes any write scope: the write scope of a group the key reads, if any.
    groups = {scope.split(":")[0] for scope in key.scopes}
    missing.sort(key=lambda scope: scope.split(":")[0] not in groups)
    return tuple(sorted({*key.scopes, missing[0]}))


def step_up_tool(tool: types.Tool, needs: Needs) -> types.Tool:
    needed = " or ".join(needed_scopes(needs))
    note = f" Needs {needed}, not yet granted to this app: calling it asks you to grant it."
    return tool.model_copy(update={"description": (tool.description or "") + note})


def with_resource_metadata(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """A 401 names where MCP clients find how to sign in (RFC 9728 §5.1), so their Connect
    button works from the bare URL, and the scopes to ask for (MCP authorization 2025-11-25,
    "scope selection")."""
    if response.status_code == 401:
        response["WWW-Authenticate"] += (
            f', resource_metadata="{resource_metadata_url(request)}"'
            f', scope="{" ".join(ALL_SCOPES)}"'
        )
    return response


def scope_challenge(request: HttpRequest, key: ApiKey, op: Operation) -> HttpResponse | None:
    """HTTP 403 insufficient_scope for a connected app's tool call that a new sign-in with
    more scopes would allow: its client asks the person and calls again (step-up). A pasted
    key gets the tool error instead, which a person reads in the assistant."""
    tool = op.name
    scopes = step_up_scopes(key, op.needs)
    if scopes is None:
        return None
    needed = " or ".join(needed_scopes(op.needs))
    response = api_error(
        "insufficient-scope",
        f"The tool {tool} needs {needed}; sign in again to grant it to this app.",
        WWW_Authenticate=(
            f'Bearer realm="api", error="insufficient_scope", scope="{" ".join(scopes)}", '
            f'resource_metadata="{resource_metadata_url(request)}", '
            f'error_description="The tool {tool} needs {needed}."'
        ),
    )
    return response
