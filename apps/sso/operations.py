"""Single sign-on over the API (docs/product.md §16): owners read the workspace's provider and
mode, set them, or remove them. Setting takes the client secret, so it is not an MCP tool;
reading is (`get_sso`)."""

from typing import Any

from apps.api.http import iso_time
from apps.api.operations import Call, Needs, NotFound, Operation, body_fields, object_schema
from apps.api.schemas import single_line_text
from apps.common.validation import InvalidInput
from apps.workspaces.models import Membership

from .models import SingleSignOn
from .saml import acs_url, sp_entity_id
from .settings_service import sso_configure, sso_configure_saml, sso_remove, sso_set_mode
from .views import redirect_uri

OWNERS = (Membership.Role.OWNER,)
READ = Needs(scope="keys:read", roles=OWNERS)
WRITE = Needs(scope="keys:write", roles=OWNERS)
MODES = ["off", "allowed", "required"]

SSO = object_schema(
    {
        "protocol": {"type": ["string", "null"], "enum": ["oidc", "saml", None]},
        "issuer": {"type": ["string", "null"]},
        "clientId": {"type": ["string", "null"]},
        "mode": {"type": "string", "enum": MODES},
        "redirectUri": {
            "type": "string",
            "description": "What to register at an OpenID provider as the redirect URI.",
        },
        "samlIdentityProvider": {
            "type": ["string", "null"],
            "description": "The SAML identity provider's entity id, from its metadata.",
        },
        "samlEntityId": {
            "type": "string",
            "description": "This workspace's SAML entity id (audience), also its metadata URL.",
        },
        "samlAcsUrl": {"type": "string", "description": "Where the SAML provider posts."},
        "testedAt": {"type": ["string", "null"], "format": "date-time"},
        "testedBy": {"type": ["string", "null"]},
    }
)
SSO_PUT = object_schema(
    {
        "issuer": single_line_text(300),
        "clientId": single_line_text(200),
        "clientSecret": single_line_text(500),
        "samlMetadata": {
            "type": "string",
            "maxLength": 200_000,
            "description": "A SAML 2.0 identity provider's metadata XML, instead of the "
            "OpenID Connect fields.",
        },
        "mode": {"type": "string", "enum": MODES},
    },
    required=False,
)
OIDC_FIELDS = ("issuer", "clientId", "clientSecret")


def sso_to_json(sso: SingleSignOn | None, workspace_id: object) -> dict[str, Any]:
    return {
        "protocol": sso.protocol if sso else None,
        "issuer": sso.issuer if sso and sso.issuer else None,
        "clientId": sso.client_id if sso and sso.client_id else None,
        "mode": sso.mode if sso else "off",
        "redirectUri": redirect_uri(),
        "samlIdentityProvider": sso.saml_entity_id if sso and sso.saml_entity_id else None,
        "samlEntityId": sp_entity_id(workspace_id),
        "samlAcsUrl": acs_url(workspace_id),
        "testedAt": iso_time(sso.tested_at) if sso and sso.tested_at else None,
        "testedBy": sso.tested_by.email if sso and sso.tested_by else None,
    }


def _get(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    sso = SingleSignOn.objects.filter(workspace=call.workspace).first()
    return sso_to_json(sso, call.workspace.pk)


def _put(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    data = body_fields(body, SSO_PUT)
    if "samlMetadata" in data:
        if mixed := [name for name in OIDC_FIELDS if name in data]:
            raise InvalidInput(
                mixed[0], "Give samlMetadata or the OpenID Connect fields, not both."
            )
        sso = sso_configure_saml(
            workspace=call.workspace, metadata=data["samlMetadata"], actor=call.actor
        )
    else:
        if missing := [name for name in OIDC_FIELDS if name not in data]:
            raise InvalidInput(
                missing[0],
                f"Give {', '.join(missing)} for an OpenID Connect provider, or samlMetadata.",
            )
        sso = sso_configure(
            workspace=call.workspace,
            issuer=data["issuer"],
            client_id=data["clientId"],
            client_secret=data["clientSecret"],
            actor=call.actor,
        )
    if "mode" in data:
        sso_set_mode(sso=sso, mode=data["mode"], actor=call.actor)
    return sso_to_json(sso, call.workspace.pk)


def _delete(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    sso = SingleSignOn.objects.filter(workspace=call.workspace).first()
    if sso is None:
        raise NotFound("This workspace has no single sign-on to remove.")
    sso_remove(sso=sso, actor=call.actor)
    return sso_to_json(None, call.workspace.pk)


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
            "Set the workspace's OpenID Connect provider (issuer, clientId, clientSecret; its "
            "discovery document must answer) or SAML 2.0 identity provider (samlMetadata) and, "
            "if given, the mode; required needs an owner's test sign-in in the dashboard first, "
            "and a new provider must be tested again. Owners only."
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
