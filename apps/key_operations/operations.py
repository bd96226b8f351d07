"""The API keys group (docs/product.md §3.6): keys managed by keys, for owners and admins.

A key never mints or rolls (and so receives the secret of) a key wider than itself; every change
is audited with the calling key as its actor. Create and roll hand out a secret, so they are not
MCP tools.
"""

from datetime import timedelta
from typing import Any

from django.core.exceptions import PermissionDenied
from django.utils import timezone

from apps.api.errors import ApiFailure, insufficient_scope
from apps.api.operations import (
    Call,
    Needs,
    Operation,
    Param,
    body_fields,
)
from apps.api_keys.narrowing import api_key_narrow, wider_than_key
from apps.api_keys.policy import clean_scopes
from apps.api_keys.restrictions import clean_restriction_changes
from apps.api_keys.rolling import api_key_roll, owner_of_service_key
from apps.api_keys.services import KEY_MANAGER_ROLES, api_key_create, api_key_revoke
from apps.api_keys.states import CURRENT
from apps.common.quota_periods import quota_from_json
from apps.common.validation import InvalidInput
from apps.quotas.uses import quota_wider

from .key_reads import get_key, key_of_call, list_keys
from .key_records import expiry_of, key_to_json, with_secret
from .key_schemas import (
    KEY,
    KEY_CREATE,
    KEY_DETAIL,
    KEY_LIST,
    KEY_NARROW,
    KEY_ROLL,
    KEY_SECRET,
    LIST_PARAMS,
)


def _refuse_twice(scopes: Any) -> None:
    """The API's scope lists are sets (uniqueItems): a scope named twice is a mistake to say."""
    if isinstance(scopes, list):
        twice = [s for s in scopes if isinstance(s, str) and scopes.count(s) > 1]
        if twice:
            raise InvalidInput("scopes", f"{twice[0]} is listed twice; name each scope once.")


def _refuse_wider(problem: str | None, what: str) -> None:
    if problem:
        raise insufficient_scope(
            ("keys:write",), f"A key cannot {what} a key wider than itself: {problem}."
        )


def _create_key(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    data = body_fields(body, KEY_CREATE)
    now = timezone.now()
    expires_at = expiry_of(data, call.key, now)
    restrictions = call.key.restrictions.updated(
        clean_restriction_changes(data.get("restrictions", {}))
    )
    _refuse_twice(data["scopes"])
    scopes = clean_scopes(data["scopes"])  # unknown names are bad input, not a wider key
    quota = quota_from_json(data.get("quota", call.key.quota_json))  # the caller's by default
    _refuse_wider(
        wider_than_key(call.key, scopes=scopes, restrictions=restrictions, expires_at=expires_at)
        or quota_wider(quota, call.key.quota),
        "create",
    )
    description = data.get("description", "")
    if not isinstance(description, str):
        raise InvalidInput("description", "description must be a string.")
    created = api_key_create(
        workspace=call.workspace,
        user=call.key.user,
        name=data["name"],
        description=description,
        scopes=scopes,
        expires_at=expires_at,
        restrictions=restrictions,
        actor=call.actor,
        quota=quota,
    )
    return with_secret(created)


def _roll_key(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    data = body_fields(body, KEY_ROLL)
    seconds = data.get("graceSeconds", 0)
    if isinstance(seconds, bool) or seconds not in KEY_ROLL["properties"]["graceSeconds"]["enum"]:
        raise InvalidInput("graceSeconds", "graceSeconds must be 0, 3600, 86400 or 604800.")
    key = key_of_call(call, params)
    if key.user_id != call.key.user_id and not owner_of_service_key(call.key.user, key):
        raise ApiFailure(
            "insufficient-role",
            "Only the key's own holder can roll it, since rolling hands out its secret; "
            "an owner or admin can revoke it instead.",
        )
    _refuse_wider(
        wider_than_key(
            call.key, scopes=key.scopes, restrictions=key.restrictions, expires_at=key.expires_at
        ),
        "roll (and so receive the secret of)",
    )
    try:
        created = api_key_roll(key=key, grace=timedelta(seconds=seconds), actor=call.actor)
    except PermissionDenied as denied:  # the holder check, made again under the row lock
        raise ApiFailure("insufficient-role", str(denied)) from None
    return with_secret(created)


def _narrow_key(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    data = body_fields(body, KEY_NARROW)
    if not data:
        raise InvalidInput("body", "Give scopes, restrictions or both.")
    if "scopes" in data and data["scopes"] is None:
        raise InvalidInput("scopes", "Scopes must be a list of scope names.")
    _refuse_twice(data.get("scopes"))
    changes = clean_restriction_changes(data["restrictions"]) if "restrictions" in data else None
    key = api_key_narrow(
        key=key_of_call(call, params),
        scopes=data.get("scopes"),
        restrictions=changes,
        actor=call.actor,
    )
    return key_to_json(key)


def _revoke_key(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    key = api_key_revoke(key=key_of_call(call, params), actor=call.actor)
    return key_to_json(key)


KEY_ID = Param("keyId", "path", "The key's id, as list_keys gives it.")
KEYS_READ = Needs(scope="keys:read", roles=KEY_MANAGER_ROLES)
KEYS_WRITE = Needs(scope="keys:write", roles=KEY_MANAGER_ROLES)
OPERATIONS = (
    Operation(
        name="list_keys",
        method="GET",
        path="/keys",
        needs=KEYS_READ,
        title="List API keys",
        summary=(
            "List the workspace's API keys, newest first: metadata only (never a secret), "
            "filtered by state, kind, holder or idleness, a page at a time (pass `next` as "
            "cursor)."
        ),
        output_name="KeyList",
        output=KEY_LIST,
        params=LIST_PARAMS,
        cli_columns=(
            "id",
            "name",
            "hint",
            "holderEmail",
            "state",
            "expiresAt:day",
            "lastUsedAt:ago",
        ),
        cli_defaults={"state": CURRENT},
        run=list_keys,
    ),
    Operation(
        name="get_key",
        method="GET",
        path="/keys/{keyId}",
        needs=KEYS_READ,
        title="Show an API key",
        summary="One API key's metadata, with when each of its scopes was last used.",
        output_name="KeyDetail",
        output=KEY_DETAIL,
        params=(KEY_ID,),
        can_be_not_found=True,
        cli="keys show",
        run=get_key,
    ),
    Operation(
        name="create_key",
        method="POST",
        path="/keys",
        needs=KEYS_WRITE,
        title="Create an API key",
        summary=(
            "Create a key for the calling key's holder, never wider than the calling key: its "
            "scopes a subset, its restrictions at least as tight (left out: the calling key's "
            "own), its expiry no later. The answer holds the secret, this once."
        ),
        output_name="KeyWithSecret",
        output=KEY_SECRET,
        body_name="KeyCreate",
        body=KEY_CREATE,
        status=201,
        mcp=False,
        run=_create_key,
    ),
    Operation(
        name="roll_key",
        method="POST",
        path="/keys/{keyId}/roll",
        needs=KEYS_WRITE,
        title="Roll an API key",
        summary=(
            "Give one of the holder's own keys (or, for an owner, a service account's) a new "
            "secret, keeping its name, scopes and history; the old secret works for "
            "graceSeconds more. The answer holds the new secret, this once."
        ),
        output_name="KeyWithSecret",
        output=KEY_SECRET,
        body_name="KeyRoll",
        body=KEY_ROLL,
        params=(KEY_ID,),
        can_be_not_found=True,
        mcp=False,
        run=_roll_key,
    ),
    Operation(
        name="narrow_key",
        method="POST",
        path="/keys/{keyId}/narrow",
        needs=KEYS_WRITE,
        title="Narrow an API key",
        summary=(
            "Take scopes away from a key or tighten its restrictions (fewer objects, fewer "
            "networks, a lower rate limit); anything that would widen it is refused."
        ),
        output_name="Key",
        output=KEY,
        body_name="KeyNarrow",
        body=KEY_NARROW,
        params=(KEY_ID,),
        can_be_not_found=True,
        run=_narrow_key,
    ),
    Operation(
        name="revoke_key",
        method="DELETE",
        path="/keys/{keyId}",
        needs=KEYS_WRITE,
        title="Revoke an API key",
        summary="Revoke any key of the workspace for good; it fails from the next request on.",
        output_name="Key",
        output=KEY,
        params=(KEY_ID,),
        status=204,
        can_be_not_found=True,
        cli_done="Revoked key {keyId}; it fails from the next request on.",
        run=_revoke_key,
    ),
)
