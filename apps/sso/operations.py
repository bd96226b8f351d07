"""Single sign-on over the API (docs/product.md §16): owners read the workspace's provider and
mode, set them, or remove them. Setting takes the client secret, so it is not an MCP tool;
reading is (`get_sso`)."""

from typing import Any

from apps.api.http import iso_time
from apps.api.operations import Call, Needs, NotFound, Operation, body_fields, object_schema
from apps.api.schemas import single_line_text
from apps.workspaces.models import Membership

from .models import SingleSignOn
from .settings_service import sso_configure, sso_remove, sso_set_mode
from .views import redirect_uri

OWNERS = (Membership.Role.OWNER,)
READ = Needs(scope="keys:read", roles=OWNERS)
WRITE = Needs(scope="keys:write", roles=OWNERS)
MODES = ["off", "allowed", "required"]

SSO = object_schema(
    {
        "protocol": {"type": ["string", "null"], "enum": ["oidc", None]},
        "issuer": {"type": ["string", "null"]},
        "clientId": {"type": ["string", "null"]},
        "mode": {"type": "string", "enum": MODES},
        "redirectUri": {
            "type": "string",
            "description": "What to register at the provider as this workspace's redirect URI.",
        },
        "testedAt": {"type": ["string", "null"], "format": "date-time"},
        "testedBy": {"type": ["string", "null"]},
    }
)
SSO_PUT = {
    **object_schema(
        {
            "issuer": single_line_text(300),
            "clientId": single_line_text(200),
            "clientSecret": single_line_text(500),
            "mode": {"type": "string", "enum": MODES},
        },
        required=False,
    ),
    "required": ["issuer", "clientId", "clientSecret"],
}


def sso_to_json(sso: SingleSignOn | None) -> dict[str, Any]:
    return {
        "protocol": "oidc" if sso else None,
        "issuer": sso.issuer if sso else None,
        "clientId": sso.client_id if sso else None,
        "mode": sso.mode if sso else "off",
        "redirectUri": redirect_uri(),
        "testedAt": iso_time(sso.tested_at) if sso and sso.tested_at else None,
        "testedBy": sso.tested_by.email if sso and sso.tested_by else None,
    }


def _get(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    return sso_to_json(SingleSignOn.objects.filter(workspace=call.workspace).first())


def _put(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    data = body_fields(body, SSO_PUT)
    sso = sso_configure(
        workspace=call.workspace,
        issuer=data["issuer"],
        client_id=data["clientId"],
        client_secret=data["clientSecret"],
        actor=call.actor,
    )
    if "mode" in data:
        sso_set_mode(sso=sso, mode=data["mode"], actor=call.actor)
    return sso_to_json(sso)


def _delete(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    sso = SingleSignOn.objects.filter(workspace=call.workspace).first()
    if sso is None:
        raise NotFound("This workspace has no single sign-on to remove.")
    sso_remove(sso=sso, actor=call.actor)
    return sso_to_json(None)


OPERATIONS = (
    Operation(
        name="get_sso",
        method="GET",
        path="/sso",
        needs=READ,
        title="Show single sign-on",
        summary=(
            "The workspace's single sign-on: its OpenID Connect provider, the mode (off, "
            "allowed, required), the redirect URI to register there, and the last test "
            "sign-in. Owners only."
        ),
        output_name="SingleSignOn",
        output=SSO,
        cli="sso show",
        run=_get,
    ),
    Operation(
        name="set_sso",
        method="PUT",
        path="/sso",
        needs=WRITE,
        title="Set single sign-on",
        summary=(
            "Set the workspace's OpenID Connect provider (its discovery document must answer) "
            "and, if given, the mode; required needs an owner's test sign-in in the dashboard "
            "first, and a new provider must be tested again. Owners only."
        ),
        output_name="SingleSignOn",
        output=SSO,
        body_name="SingleSignOnPut",
        body=SSO_PUT,
        cli="sso set",
        mcp=False,
        run=_put,
    ),
    Operation(
        name="remove_sso",
        method="DELETE",
        path="/sso",
        needs=WRITE,
        title="Remove single sign-on",
        summary="Remove the workspace's single sign-on: everyone signs in with passwords.",
        output_name="SingleSignOn",
        output=SSO,
        status=204,
        can_be_not_found=True,
        cli="sso remove",
        cli_done="Single sign-on removed: everyone signs in with passwords.",
        mcp=False,
        run=_delete,
    ),
)
