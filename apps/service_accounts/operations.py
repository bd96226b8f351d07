"""Service accounts over the API (docs/product.md §12): owners list, make, change and delete
them and make their keys. Making a key hands out its secret, so it is not an MCP tool."""

from typing import Any

from django.core.exceptions import PermissionDenied
from django.utils import timezone

from apps.api.errors import ApiFailure, insufficient_scope
from apps.api.http import iso_time
from apps.api.operations import Call, Needs, NotFound, Operation, Param, body_fields
from apps.api_keys.narrowing import wider_than_key
from apps.api_keys.policy import clean_scopes
from apps.api_keys.restrictions import clean_restriction_changes
from apps.common.quota_periods import quota_from_json
from apps.key_operations.key_records import expiry_of, with_secret
from apps.key_operations.key_schemas import KEY_CREATE, KEY_SECRET
from apps.quotas.uses import QuotaUse, quota_wider
from apps.workspaces.models import Membership, ServiceAccount

from .schemas import (
    SERVICE_ACCOUNT,
    SERVICE_ACCOUNT_CREATE,
    SERVICE_ACCOUNT_LIST,
    SERVICE_ACCOUNT_PATCH,
)
from .services import (
    service_account_create,
    service_account_delete,
    service_account_in,
    service_account_key_create,
    service_account_update,
    service_accounts_of,
)
from .shared_quota import shared_quota_uses

OWNERS = (Membership.Role.OWNER,)
READ = Needs(scope="keys:read", roles=OWNERS)
WRITE = Needs(scope="keys:write", roles=OWNERS)
ACCOUNT_ID = Param("serviceAccountId", "path", "The service account's id.")


def account_to_json(account: ServiceAccount, use: QuotaUse | None = None) -> dict[str, Any]:
    """A service account's API record (annotated by `service_accounts_of`), with `use` its
    shared quota's current period."""
    last_used = getattr(account, "last_used_at", None)
    return {
        "id": account.pk,
        "name": account.name,
        "description": account.description,
        "userEmail": account.user.email,
        "createdAt": iso_time(account.created_at),
        "createdBy": account.created_by.email if account.created_by else None,
        "liveKeys": getattr(account, "live_keys", 0),
        "lastUsedAt": iso_time(last_used) if last_used else None,
        "quotaShared": account.shared_quota.as_json() if account.shared_quota else None,
        "quotaUse": use.as_json() if use else None,
    }


def _account(call: Call, params: dict[str, Any]) -> ServiceAccount:
    account = service_account_in(call.workspace, params["serviceAccountId"])
    if account is None:
        raise NotFound("No service account with this id in this workspace.")
    return account


def _owner_only(action: Any) -> Any:
    try:
        return action()
    except PermissionDenied as denied:  # the role, asked again inside the service
        raise ApiFailure("insufficient-role", str(denied)) from None


def _list(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    accounts = list(service_accounts_of(call.workspace))
    uses = shared_quota_uses(accounts)
    return {"data": [account_to_json(a, uses.get(a.pk)) for a in accounts]}


def _get(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    account = _account(call, params)
    return account_to_json(account, shared_quota_uses([account]).get(account.pk))


def _create(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    data = body_fields(body, SERVICE_ACCOUNT_CREATE)
    quota_from_json(data.get("quotaShared"), "quotaShared")  # refused before anything is made
    account = _owner_only(
        lambda: service_account_create(
            workspace=call.workspace,
            name=data["name"],
            description=data.get("description", ""),
            actor=call.actor,
        )
    )
    if data.get("quotaShared") is not None:
        service_account_update(
            account=account, changes={"quotaShared": data["quotaShared"]}, actor=call.actor
        )
    return _get(call, {"serviceAccountId": account.pk}, None)


def _update(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    data = body_fields(body, SERVICE_ACCOUNT_PATCH)
    if not data:
        raise ApiFailure("invalid-input", "Give name, description, quotaShared or more.")
    account = _account(call, params)
    _owner_only(lambda: service_account_update(account=account, changes=data, actor=call.actor))
    return _get(call, params, None)


def _delete(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    account = _account(call, params)
    _owner_only(lambda: service_account_delete(account=account, actor=call.actor))
    return account_to_json(account)


def _create_key(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    data = body_fields(body, KEY_CREATE)
    account = _account(call, params)
    now = timezone.now()
    expires_at = expiry_of(data, call.key, now)
    restrictions = call.key.restrictions.updated(
        clean_restriction_changes(data.get("restrictions", {}))
    )
    scopes = clean_scopes(data["scopes"])
    # The caller's by default, or the quota the account's keys share.
    default = account.shared_quota.as_json() if account.shared_quota else call.key.quota_json
    quota = quota_from_json(data.get("quota", default))
    # The owner's key hands the secret to its caller: never a key wider than itself.
    if problem := wider_than_key(
        call.key, scopes=scopes, restrictions=restrictions, expires_at=expires_at
    ) or quota_wider(quota, call.key.quota):
        raise insufficient_scope(
            ("keys:write",), f"A key cannot create a key wider than itself: {problem}."
        )
    created = _owner_only(
        lambda: service_account_key_create(
            account=account,
            name=data["name"],
            description=data.get("description", ""),
            scopes=scopes,
            expires_at=expires_at,
            restrictions=restrictions,
            actor=call.actor,
            quota=quota,
        )
    )
    return with_secret(created)


OPERATIONS = (
    Operation(
        name="list_service_accounts",
        method="GET",
        path="/service-accounts",
        needs=READ,
        title="List service accounts",
        summary=(
            "List the workspace's service accounts: holders of keys that are not people, so "
            "integrations outlive the teammates who set them up."
        ),
        output_name="ServiceAccountList",
        output=SERVICE_ACCOUNT_LIST,
        cli_columns=("id", "name", "userEmail", "liveKeys", "lastUsedAt", "createdBy"),
        run=_list,
    ),
    Operation(
        name="get_service_account",
        method="GET",
        path="/service-accounts/{serviceAccountId}",
        needs=READ,
        title="Show a service account",
        summary="One service account: its name, description, who made it and its keys' use.",
        output_name="ServiceAccount",
        output=SERVICE_ACCOUNT,
        params=(ACCOUNT_ID,),
        can_be_not_found=True,
        cli="service-accounts show",
        run=_get,
    ),
    Operation(
        name="create_service_account",
        method="POST",
        path="/service-accounts",
        needs=WRITE,
        title="Create a service account",
        summary=(
            "Make a service account: an admin of the workspace that never signs in and holds "
            "keys for integrations. Owners only."
        ),
        output_name="ServiceAccount",
        output=SERVICE_ACCOUNT,
        body_name="ServiceAccountCreate",
        body=SERVICE_ACCOUNT_CREATE,
        status=201,
        run=_create,
    ),
    Operation(
        name="update_service_account",
        method="PATCH",
        path="/service-accounts/{serviceAccountId}",
        needs=WRITE,
        title="Change a service account",
        summary=(
            "Rename a service account, change its description, or give all its keys one "
            "shared quota (quotaShared). Owners only."
        ),
        output_name="ServiceAccount",
        output=SERVICE_ACCOUNT,
        body_name="ServiceAccountPatch",
        body=SERVICE_ACCOUNT_PATCH,
        params=(ACCOUNT_ID,),
        can_be_not_found=True,
        cli="service-accounts update",
        run=_update,
    ),
    Operation(
        name="delete_service_account",
        method="DELETE",
        path="/service-accounts/{serviceAccountId}",
        needs=WRITE,
        title="Delete a service account",
        summary=(
            "Delete a service account: every key of it is revoked at once, in the same change. "
            "Owners only."
        ),
        output_name="ServiceAccount",
        output=SERVICE_ACCOUNT,
        params=(ACCOUNT_ID,),
        status=204,
        can_be_not_found=True,
        cli_done="Deleted service account {serviceAccountId}; its keys are revoked.",
        run=_delete,
    ),
    Operation(
        name="create_service_account_key",
        method="POST",
        path="/service-accounts/{serviceAccountId}/keys",
        needs=WRITE,
        title="Create a service account's key",
        summary=(
            "Make a key of a service account, never wider than the calling key and capped by "
            "the admin role. Owners only. The answer holds the secret, this once."
        ),
        output_name="KeyWithSecret",
        output=KEY_SECRET,
        body_name="KeyCreate",
        body=KEY_CREATE,
        params=(ACCOUNT_ID,),
        status=201,
        can_be_not_found=True,
        mcp=False,
        cli="keys create",  # `gatehouse keys create --service-account ID`
        run=_create_key,
    ),
)
