"""A key's quota over the API (docs/product.md §17): POST /keys/{id}/quota, an owner topping
it up or setting what is left of its period."""

from typing import Any

from django.utils import timezone

from apps.api.errors import ApiFailure
from apps.api.operations import Call, Needs, NotFound, Operation, body_fields, object_schema
from apps.api_keys.models import ApiKey
from apps.api_keys.operations import KEY_ID
from apps.audit.services import audit_record
from apps.quotas.counting import QuotaUse, holder_of
from apps.quotas.periods import REQUESTS_MAX
from apps.quotas.schemas import QUOTA_USE_RECORD
from apps.quotas.topping import quota_change_left
from apps.workspaces.models import Membership

from .audit_actions import KEY_QUOTA_CHANGED

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


def _change_quota(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    data = body_fields(body, QUOTA_CHANGE)
    key = ApiKey.objects.filter(workspace=call.workspace, pk=params["keyId"]).first()
    if key is None:
        raise NotFound("No key with this id in this workspace.")
    holder = holder_of(key.pk, key.quota, key.created_at)
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
            data={"before": before.left, "after": after.left, **data},
        )

    after = quota_change_left(holder, now, add=data.get("add"), set_to=data.get("set"), audit=audit)
    return after.as_json()


OPERATIONS = (
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
