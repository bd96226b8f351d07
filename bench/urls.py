from django.http import HttpRequest, JsonResponse
from django.urls import path

from apps.api_keys.models import ApiKey
from apps.workspaces.operations import workspace_to_json
from config.urls import urlpatterns as app_urlpatterns


def workspace_without_auth(request: HttpRequest, key_id: int) -> JsonResponse:
    """The same record GET /api/v1/workspace returns, read by primary key with the same joins
    and no authentication: the baseline the authenticated endpoint is measured against."""
    key = ApiKey.objects.select_related("workspace", "user").get(pk=key_id)
    return JsonResponse(workspace_to_json(key.workspace, key))


# Right after the API's own routes, so that both are resolved at the same cost.
urlpatterns = [
    app_urlpatterns[0],
    path("bench/workspace/<int:key_id>", workspace_without_auth),
    *app_urlpatterns[1:],
]
