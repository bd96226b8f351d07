"""The workspace record: GET and PATCH /workspace, the get_workspace and update_workspace tools."""

from typing import TYPE_CHECKING, Any

from apps.api.operations import Call, Needs, Operation, object_schema
from apps.api.schemas import single_line_text
from apps.api.scopes import EVERY_SCOPE

from .choices import TRANSCRIPTION_LANGUAGES
from .models import Membership, Workspace
from .services import workspace_update
from .validators import validate_workspace_patch

if TYPE_CHECKING:
    from apps.api_keys.models import ApiKey


def workspace_to_json(workspace: Workspace, key: "ApiKey") -> dict[str, Any]:
    """The workspace record as the calling key sees it."""
    return {
        "workspaceId": str(workspace.pk),
        "workspaceName": workspace.name,
        "userEmail": key.user.email,
        "scopes": sorted(key.scopes),
        "timezone": workspace.timezone,
        "autoTranscribeUploads": workspace.auto_transcribe_uploads,
        "transcriptionLanguage": workspace.transcription_language,
    }


WORKSPACE_RECORD = object_schema(
    {
        "workspaceId": {"type": "string", "format": "uuid"},
        "workspaceName": {"type": "string"},
        "userEmail": {"type": "string", "format": "email"},
        "scopes": {
            "type": "array",
            "items": {"type": "string", "enum": list(EVERY_SCOPE)},
            "uniqueItems": True,
            "minItems": 1,
        },
        "timezone": {"type": "string"},
        "autoTranscribeUploads": {"type": "boolean"},
        "transcriptionLanguage": {"type": "string"},
    }
)

# The shape of an IANA name (Area/Location, Etc/GMT+5, UTC); which names exist is the
# server's tz database's to say.
TIMEZONE_PATTERN = r"^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+){0,2}$"

WORKSPACE_PATCH = {
    "type": "object",
    "description": (
        "At least one settable field; all are validated before any is written. "
        "videoSettings, read-only fields and unknown fields are refused with invalid-input: "
        "the default video quality can be changed only in the dashboard."
    ),
    "minProperties": 1,
    "additionalProperties": False,
    "properties": {
        "workspaceName": single_line_text(100),
        # A string, not an enum of ~600 names: the list grows with each tz database release,
        # and its aliases (GMT0, GMT+0, GMT-0) collide once a client generator names them.
        "timezone": {
            "type": "string",
            "minLength": 1,
            "maxLength": 64,
            "pattern": TIMEZONE_PATTERN,
            "description": (
                "A time zone name of the IANA database (https://www.iana.org/time-zones), "
                "exactly as Python's zoneinfo spells it, other than Factory and localtime: "
                "Area/Location such as Europe/Berlin, or UTC. A name this server's database "
                "does not hold is 400 invalid-input naming the field."
            ),
            "examples": ["Europe/Berlin", "America/New_York", "Asia/Kolkata", "UTC"],
        },
        "autoTranscribeUploads": {
            "type": "boolean",
            "description": "Whether uploaded videos are transcribed automatically.",
        },
        "transcriptionLanguage": {
            "type": "string",
            "description": "A supported ISO 639-1 code for automatic transcription.",
            "enum": list(TRANSCRIPTION_LANGUAGES),
        },
    },
}


def _get(call: Call, params: dict[str, int], body: Any) -> dict[str, Any]:
    return workspace_to_json(call.workspace, call.key)


def _update(call: Call, params: dict[str, int], body: Any) -> dict[str, Any]:
    workspace = workspace_update(
        workspace=call.workspace, changes=validate_workspace_patch(body), actor=call.actor
    )
    return workspace_to_json(workspace, call.key)


OPERATIONS = (
    Operation(
        name="get_workspace",
        method="GET",
        path="/workspace",
        needs=Needs(),
        title="Read the workspace",
        summary=(
            "Read the key's workspace: id, name, the holder's e-mail, the key's scopes, time "
            "zone and transcription defaults. Any active workspace key may; use it to check a key."
        ),
        output_name="Workspace",
        output=WORKSPACE_RECORD,
        run=_get,
        cli="workspace get",
    ),
    Operation(
        name="update_workspace",
        method="PATCH",
        path="/workspace",
        needs=Needs(any_write=True, roles=(Membership.Role.OWNER,)),
        title="Change workspace settings",
        summary=(
            "Change the workspace's name, time zone (IANA), automatic transcription or its "
            "language: only the fields sent, all checked before any is written. Needs any "
            ":write scope and an owner's key. Video quality is set in the dashboard only."
        ),
        output_name="Workspace",
        output=WORKSPACE_RECORD,
        body_name="WorkspacePatch",
        body=WORKSPACE_PATCH,
        run=_update,
        cli="workspace set",
        cli_flags={
            "workspaceName": "name",
            "autoTranscribeUploads": "auto-transcribe",
            "transcriptionLanguage": "language",
        },
    ),
)
