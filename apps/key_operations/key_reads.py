"""The API's reads of keys (docs/product.md §3.6): a page of the workspace's keys, and one key
with what only its own record shows."""

from typing import Any

from django.utils import timezone

from apps.api.http import iso_time
from apps.api.operations import Call, NotFound
from apps.api_keys.models import ApiKey
from apps.api_keys.states import holder_condition, idle_condition
from apps.quotas.uses import quota_use_json

from .handed_over import handed_over_to
from .key_records import decode_cursor, encode_cursor, key_to_json


def list_keys(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    """list_keys: a page of the workspace's keys, filtered as `params` ask."""
    # Newest first by id: a key created while a client pages gets a higher id and so never
    # shifts what the next page holds.
    keys = (
        ApiKey.objects.filter(workspace=call.workspace)
        .select_related("user__service_account", "approved_by", "denied_by")
        .order_by("-id")
    )
    if "state" in params:
        keys = keys.in_state(params["state"])
    if "kind" in params:
        keys = keys.filter(kind=params["kind"])
    if "holder" in params:
        keys = keys.filter(holder_condition(params["holder"]))
    if "idleDays" in params:
        keys = keys.filter(idle_condition(params["idleDays"], timezone.now()))
    if "cursor" in params:
        keys = keys.filter(pk__lt=decode_cursor(params["cursor"]))
    page = list(keys[: params["limit"] + 1])
    more = len(page) > params["limit"]
    page = page[: params["limit"]]
    return {
        "data": [key_to_json(key) for key in page],
        "next": encode_cursor(page[-1].pk) if more else None,
    }


def key_of_call(call: Call, params: dict[str, Any]) -> ApiKey:
    """The key `keyId` names, looked up in the calling key's workspace only."""
    key = (
        ApiKey.objects.filter(workspace=call.workspace, pk=params["keyId"])
        .select_related("user__service_account", "workspace")
        .first()
    )
    if key is None:
        raise NotFound("No key with this id in this workspace.")
    return key


def get_key(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    """get_key: one key's record, with its scopes' last use, its quota and its hand-over."""
    key = key_of_call(call, params)
    used = {scope: key.scope_used_at(scope) for scope in sorted(key.scopes)}
    return {
        **key_to_json(key),
        "scopesLastUsed": {scope: iso_time(at) if at else None for scope, at in used.items()},
        "quotaUse": quota_use_json(key),
        "handedOverTo": handover.as_json() if (handover := handed_over_to(key)) else None,
    }
