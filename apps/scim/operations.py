"""SCIM tokens over the API (docs/product.md §16): owners list, make and revoke the tokens their
identity provider uses at /scim/v2/. Making one hands out its secret, so it is not an MCP
tool."""

from typing import Any

from apps.api.http import iso_time
from apps.api.operations import Call, Needs, NotFound, Operation, Param, body_fields, object_schema
from apps.api.schemas import single_line_text
from apps.workspaces.models import Membership

from .models import ScimToken
from .tokens import scim_token_create, scim_token_in, scim_token_revoke, scim_tokens_of

OWNERS = (Membership.Role.OWNER,)
READ = Needs(scope="keys:read", roles=OWNERS)
WRITE = Needs(scope="keys:write", roles=OWNERS)
TOKEN_ID = Param("scimTokenId", "path", "The SCIM token's id.")

SCIM_TOKEN = object_schema(
    {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "hint": {"type": "string", "description": "gst_ and the secret's last four characters."},
        "createdAt": {"type": "string", "format": "date-time"},
        "lastUsedAt": {"type": ["string", "null"], "format": "date-time"},
    }
)
SCIM_TOKEN_LIST = object_schema({"data": {"type": "array", "items": SCIM_TOKEN}})
SCIM_TOKEN_CREATE = object_schema({"name": single_line_text(100)})
SCIM_TOKEN_SECRET = object_schema(
    {
        "token": SCIM_TOKEN,
        "secret": {
            "type": "string",
            "description": "The token's secret (gst_…), shown this once: the identity "
            "provider sends it as Authorization: Bearer to /scim/v2/.",
        },
    }
)


def token_to_json(token: ScimToken) -> dict[str, Any]:
    return {
        "id": token.pk,
        "name": token.name,
        "hint": token.hint,
        "createdAt": iso_time(token.created_at),
        "lastUsedAt": iso_time(token.last_used_at) if token.last_used_at else None,
    }


def _token(call: Call, params: dict[str, Any]) -> ScimToken:
    token = scim_token_in(call.workspace, params["scimTokenId"])
    if token is None:
        raise NotFound("No working SCIM token with this id in this workspace.")
    return token


def _list(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    return {"data": [token_to_json(t) for t in scim_tokens_of(call.workspace)]}


def _create(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    data = body_fields(body, SCIM_TOKEN_CREATE)
    made = scim_token_create(workspace=call.workspace, name=data["name"], actor=call.actor)
    return {"token": token_to_json(made.token), "secret": made.secret}


def _revoke(call: Call, params: dict[str, Any], body: Any) -> dict[str, Any]:
    token = _token(call, params)
    return token_to_json(scim_token_revoke(token=token, actor=call.actor))


OPERATIONS = (
    Operation(
        name="list_scim_tokens",
        method="GET",
        path="/scim-tokens",
        needs=READ,
        title="List SCIM tokens",
        summary=(
            "List the workspace's working SCIM tokens: the credentials its identity provider "
            "uses at /scim/v2/ to add, suspend and remove teammates. Owners only."
        ),
        output_name="ScimTokenList",
        output=SCIM_TOKEN_LIST,
        cli_columns=("id", "name", "hint", "createdAt", "lastUsedAt"),
        run=_list,
    ),
    Operation(
        name="create_scim_token",
        method="POST",
        path="/scim-tokens",
        needs=WRITE,
        title="Create a SCIM token",
        summary=(
            "Make a SCIM token for the workspace's identity provider; the answer holds its "
            "secret, this once. It opens /scim/v2/ of this workspace and nothing else. Owners "
            "only."
        ),
        output_name="ScimTokenWithSecret",
        output=SCIM_TOKEN_SECRET,
        body_name="ScimTokenCreate",
        body=SCIM_TOKEN_CREATE,
        status=201,
        mcp=False,
        run=_create,
    ),
    Operation(
        name="revoke_scim_token",
        method="DELETE",
        path="/scim-tokens/{scimTokenId}",
        needs=WRITE,
        title="Revoke a SCIM token",
        summary=(
            "Revoke a SCIM token: the identity provider's next request with it is refused. "
            "Owners only."
        ),
        output_name="ScimToken",
        output=SCIM_TOKEN,
        params=(TOKEN_ID,),
        status=204,
        can_be_not_found=True,
        cli_done="Revoked SCIM token {scimTokenId}.",
        mcp=False,  # the identity provider's settings are read-only to connected apps
        run=_revoke,
    ),
)
