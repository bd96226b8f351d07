"""GET and PATCH /api/v1/workspace."""

from typing import Any

from django.http import HttpRequest, JsonResponse

from apps.api.errors import api_error
from apps.api.http import BodyError, json_body, methods
from apps.api_keys.auth import api_key_required
from apps.api_keys.models import ApiKey
from apps.common.http import request_actor
from apps.common.validation import InvalidInput

from .models import Workspace
from .services import workspace_update
from .validators import validate_workspace_patch


def workspace_to_json(workspace: Workspace, key: ApiKey) -> dict[str, Any]:
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


@api_key_required()
def workspace_detail(request: HttpRequest) -> JsonResponse:
    return JsonResponse(workspace_to_json(request.workspace, request.api_key))


@api_key_required(any_write=True)
def workspace_patch(request: HttpRequest) -> JsonResponse:
    try:
        changes = validate_workspace_patch(json_body(request))
    except BodyError as error:
        return error.response
    except InvalidInput as error:
        return api_error("invalid-input", error.message)
    workspace = workspace_update(
        workspace=request.workspace, changes=changes, actor=request_actor(request)
    )
    return JsonResponse(workspace_to_json(workspace, request.api_key))


workspace = methods(GET=workspace_detail, PATCH=workspace_patch)
