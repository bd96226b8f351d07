"""The key policy and approvals over the API (docs/product.md §3.6, §10): GET and PATCH
/workspace/policy, POST /keys/{id}/approve and /deny. Approving is a person's decision, so
neither is an MCP tool."""

from typing import Any

from apps.api.errors import ApiFailure
from apps.api.operations import Call, Needs, NotFound, Operation, body_fields, object_schema
from apps.api.schemas import long_text
from apps.api_keys.models import ApiKey
from apps.api_keys.policy import MAX_LIFETIME
from apps.common.quota_periods import quota_from_json
from apps.common.validation import InvalidInput, clean_bool
from apps.key_operations.key_records import key_to_json
from apps.key_operations.key_schemas import KEY
from apps.key_operations.operations import KEY_ID
from apps.quotas.schemas import QUOTA_OR_NULL
from apps.workspaces.choices import KeyApproval
from apps.workspaces.models import Membership, Workspace
from apps.workspaces.services import workspace_update
from apps.workspaces.validators import IDLE_DAYS_MAX, IDLE_DAYS_MIN, clean_idle_days

from .services import (
    REASON_MAX_LENGTH,
    Decision,
    NotWaiting,
    api_key_decide,
    approval_decider_problem,
)

OWNER = (Membership.Role.OWNER,)

POLICY_FIELDS = {
    "maxLifetimeDays": "key_max_lifetime_days",
    "allowNoExpiry": "key_allow_no_expiry",
    "requireTwoFactor": "require_two_factor",
    "approval": "key_approval",
    "idleDays": "key_idle_days",
    "memberQuota": "member_quota",
}
_POLICY_PROPERTIES: dict[str, Any] = {
    "maxLifetimeDays": {
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_LIFETIME.days,
        "description": "The longest lifetime of a new key, in days (CLI keys last 90).",
    },
    "allowNoExpiry": {
        "type": "boolean",
        "description": "Whether a new key may have no expiry at all.",
    },
    "requireTwoFactor": {
        "type": "boolean",
        "description": "Whether everyone in the workspace must sign in with a second factor.",
    },
    "approval": {
        "type": "string",
        "enum": list(KeyApproval.values),
        "description": (
            "Which new keys of admins and members wait for an owner's approval: off (none), "
            "write (those holding a :write scope or keys:read / keys:write), all (every one). "
            "Owners' own keys never wait."
        ),
    },
    "idleDays": {
        "type": ["integer", "null"],
        "minimum": IDLE_DAYS_MIN,
        "maximum": IDLE_DAYS_MAX,
        "description": (
            "Keys unused (or never used since creation) for this many days are revoked, after "
            "a warning 7 days before; null: never."
        ),
    },
    "memberQuota": {
        **QUOTA_OR_NULL,
        "description": "Every new member key's quota, unless an owner gives it another; null: "
        "none.",
    },
}
POLICY = object_schema(_POLICY_PROPERTIES)
POLICY_PATCH = {
    **object_schema(
        {
            **_POLICY_PROPERTIES,
            "maxLifetimeDays": {
                **_POLICY_PROPERTIES["maxLifetimeDays"],
                "type": ["integer", "null"],
                "description": "1 to 365 days; null for no limit of the workspace's own (365).",
            },
        },
        required=False,
    ),
    "minProperties": 1,
    "description": "At least one field; all are checked before any is written.",
}
DENY = object_schema(
    {
        "reason": {
            **long_text(REASON_MAX_LENGTH, required=False),
            "description": "Why, for the key's holder (up to 500 characters).",
        }
    },
    required=False,
)


def policy_to_json(workspace: Workspace) -> dict[str, Any]:
    return {name: getattr(workspace, field) for name, field in POLICY_FIELDS.items()}


def clean_policy_patch(body: Any) -> dict[str, Any]:
    """The model fields a policy PATCH sets, every field checked before any is written."""
    data = body_fields(body, POLICY_PATCH)
    if not data:
        raise InvalidInput("body", "Give at least one of " + ", ".join(POLICY_FIELDS) + ".")
    changes: dict[str, Any] = {}
    for name, value in data.items():
        if name == "maxLifetimeDays":
            if value is None:
                value = MAX_LIFETIME.days
            if isinstance(value, float) and value.is_integer():  # JSON's 90.0 is 90
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidInput(name, f"{name} must be a whole number of days or null.")
            if not 1 <= value <= MAX_LIFETIME.days:
                raise InvalidInput(name, f"{name} must be from 1 to {MAX_LIFETIME.days} days.")
        elif name == "approval":
            if value not in KeyApproval.values:
                raise InvalidInput(name, f"{name} must be one of off, write, all.")
        elif name == "idleDays":
            value = clean_idle_days(value, name)
        elif name == "memberQuota":
            quota = quota_from_json(value, name)
            value = quota.as_json() if quota else None
        else:
            value = clean_bool(value, name)
        changes[POLICY_FIELDS[name]] = value
    return changes


def _get_policy(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    return policy_to_json(Workspace.objects.get(pk=call.workspace.pk))


def _update_policy(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    workspace = workspace_update(
        workspace=call.workspace, changes=clean_policy_patch(body), actor=call.actor
    )
    return policy_to_json(workspace)


def _decide(call: Call, params: dict[str, Any], decision: Decision) -> dict[str, Any]:
    key = (
        ApiKey.objects.filter(workspace=call.workspace, pk=params["keyId"])
        .select_related("user", "workspace")
        .first()
    )
    if key is None:
        raise NotFound("No key with this id in this workspace.")
    if problem := approval_decider_problem(call.key.user, key):
        raise ApiFailure("insufficient-role", problem)
    try:
        key = api_key_decide(key=key, decision=decision, actor=call.actor)
    except NotWaiting as not_waiting:
        raise ApiFailure("conflict", str(not_waiting)) from None
    return key_to_json(key)


def _approve(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    return _decide(call, params, Decision(approve=True))


def _deny(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    data = body_fields(body if body is not None else {}, DENY)
    reason = data.get("reason", "")
    if not isinstance(reason, str):
        raise InvalidInput("reason", "reason must be a string.")
    return _decide(call, params, Decision(approve=False, reason=reason))


DECIDE_NEEDS = Needs(scope="keys:write", roles=OWNER)

OPERATIONS = (
    Operation(
        name="get_key_policy",
        method="GET",
        path="/workspace/policy",
        needs=Needs(roles=OWNER),
        title="Read the key policy",
        summary=(
            "The key policy: a new key's longest life, whether it may never expire, "
            "two-factor, approvals, idle days."
        ),
        output_name="KeyPolicy",
        output=POLICY,
        run=_get_policy,
        cli="policy get",
    ),
    Operation(
        name="update_key_policy",
        method="PATCH",
        path="/workspace/policy",
        needs=Needs(scope="keys:write", roles=OWNER),
        title="Change the key policy",
        summary=(
            "Change the key policy: only the fields sent, all checked before any is written, "
            "each change audited before and after. Needs keys:write and an owner's key."
        ),
        output_name="KeyPolicy",
        output=POLICY,
        body_name="KeyPolicyPatch",
        body=POLICY_PATCH,
        run=_update_policy,
        cli="policy set",
        cli_flags={"maxLifetimeDays": "max-lifetime-days", "requireTwoFactor": "require-2fa"},
    ),
    Operation(
        name="approve_key",
        method="POST",
        path="/keys/{keyId}/approve",
        needs=DECIDE_NEEDS,
        title="Approve a waiting API key",
        summary=(
            "Approve a key that waits for an owner's approval: it works from the next "
            "request on. Only an owner other than the key's holder may; a key that does not "
            "wait is 409 conflict."
        ),
        output_name="Key",
        output=KEY,
        params=(KEY_ID,),
        can_be_not_found=True,
        can_conflict=True,
        mcp=False,
        run=_approve,
    ),
    Operation(
        name="deny_key",
        method="POST",
        path="/keys/{keyId}/deny",
        needs=DECIDE_NEEDS,
        title="Deny a waiting API key",
        summary=(
            "Deny a key that waits for an owner's approval, with an optional reason for its "
            "holder: it never works. Only an owner other than the key's holder may; a key "
            "that does not wait is 409 conflict."
        ),
        output_name="Key",
        output=KEY,
        body_name="KeyDeny",
        body=DENY,
        params=(KEY_ID,),
        can_be_not_found=True,
        can_conflict=True,
        mcp=False,
        run=_deny,
    ),
)
