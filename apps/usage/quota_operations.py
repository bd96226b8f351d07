"""A key's quota over the API (docs/product.md §17): POST /keys/{id}/quota, an owner topping
it up or setting what is left of its period."""

from typing import Any

from django.utils import timezone

from apps.api.errors import ApiFailure
from apps.api.operations import Call, Needs, NotFound, Operation, body_fields, object_schema
from apps.api_keys.creation_checks import KEY_MANAGER_ROLES
from apps.api_keys.models import ApiKey
from apps.audit.services import audit_record
from apps.common.quota_periods import REQUESTS_MAX, quota_from_json
from apps.key_operations.key_records import key_to_json
from apps.key_operations.key_schemas import KEY
from apps.key_operations.operations import KEY_ID
from apps.quotas.counting import holder_of
from apps.quotas.schemas import QUOTA, QUOTA_USE_RECORD
from apps.quotas.topping import quota_change_left
from apps.quotas.uses import QuotaUse
from apps.workspaces.models import Membership

from .audit_actions import KEY_QUOTA_CHANGED
from .key_quotas import api_key_set_quota

QUOTA_CHANGE = {
    **object_schema(
        {
            "add": {"type": "integer", "minimum": 1, "maximum": REQUESTS_MAX},
            "set": {"type": "integer", "minimum": 0, "maximum": REQUESTS_MAX},
        },
        required=False,
    ),
    "minProperties": 1,
    "maxProperties": 1,
    "description": "add: this many more requests this period; set: exactly this many left.",
}


def _key(call: Call, params: dict[str, Any]) -> ApiKey:
    key = (
        ApiKey.objects.filter(workspace=call.workspace, pk=params["keyId"])
        .select_related("user__service_account", "workspace")
        .first()
    )
    if key is None:
        raise NotFound("No key with this id in this workspace.")
    return key


def _role(call: Call) -> str | None:
    return (
        Membership.objects.filter(workspace=call.workspace, user_id=call.key.user_id)
        .values_list("role", flat=True)
        .first()
    )


def _set_quota(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    data = body_fields(body, QUOTA)
    quota = quota_from_json(data)
    key = api_key_set_quota(key=_key(call, params), quota=quota, actor=call.actor, role=_role(call))
    return key_to_json(key)


def _remove_quota(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    key = api_key_set_quota(key=_key(call, params), quota=None, actor=call.actor, role=_role(call))
    return key_to_json(key)


def _change_quota(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    data = body_fields(body, QUOTA_CHANGE)
    key = _key(call, params)
    holder = holder_of(key)
    if holder is None:
        raise ApiFailure(
            "conflict", "This key has no quota to top up; narrow it to give it one first."
        )
    now = timezone.now()

    def audit(before: QuotaUse, after: QuotaUse) -> None:
        audit_record(
            workspace=call.workspace,
            action=KEY_QUOTA_CHANGED,
            actor=call.actor,
            key=key,
            subject=f"{key.name} ({key.hint})",
            data={
                "before": before.left,
                "after": after.left,
                **data,
                **({"shared": True} if key.quota_shared else {}),
            },
        )

    after = quota_change_left(holder, now, add=data.get("add"), set_to=data.get("set"), audit=audit)
    return after.as_json()


OPERATIONS = (
    Operation(
        name="set_key_quota",
        method="PATCH",
        path="/keys/{keyId}/quota",
        needs=Needs(scope="keys:write", roles=KEY_MANAGER_ROLES),
        title="Set an API key's quota",
        summary=(
            "Give a key a quota of requests a day, week or month (or once): lowering it is "
            "narrowing the key, for owners and admins; raising it or changing its period needs "
            "an owner. The count of the current period carries over."
        ),
        output_name="Key",
        output=KEY,
        body_name="Quota",
        body=QUOTA,
        params=(KEY_ID,),
        can_be_not_found=True,
        can_conflict=True,
        cli="keys set-quota",
        run=_set_quota,
    ),
    Operation(
        name="remove_key_quota",
        method="DELETE",
        path="/keys/{keyId}/quota",
        needs=Needs(scope="keys:write", roles=(Membership.Role.OWNER,)),
        title="Remove an API key's quota",
        summary="An owner removes a key's quota: only its rate limit bounds it from then on.",
        output_name="Key",
        output=KEY,
        params=(KEY_ID,),
        can_be_not_found=True,
        can_conflict=True,
        cli="keys remove-quota",
        mcp=False,
        run=_remove_quota,
    ),
    Operation(
        name="change_key_quota",
        method="POST",
        path="/keys/{keyId}/quota",
        needs=Needs(scope="keys:write", roles=(Membership.Role.OWNER,)),
        title="Top up an API key's quota",
        summary=(
            "An owner adds requests to what is left of a key's quota this period ({add: N}), "
            "or sets what is left ({set: N}); audited with before and after."
        ),
        output_name="QuotaUse",
        output=QUOTA_USE_RECORD,
        body_name="QuotaChange",
        body=QUOTA_CHANGE,
        params=(KEY_ID,),
        can_be_not_found=True,
        can_conflict=True,
        cli="keys quota",
        mcp=False,  # an owner's decision on money-like allowance, made in person (as approvals)
        run=_change_quota,
    ),
)
