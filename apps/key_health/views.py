"""The Key health page: a glance at what needs attention, each count one click from the list
where it can be acted on (bulk revoke, narrow)."""

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from apps.workspaces.decorators import WorkspaceRequest, workspace_staff_required

from .checks import health_checks


@require_http_methods(["GET"])
@workspace_staff_required()
def key_health(request: WorkspaceRequest) -> HttpResponse:
    checks = health_checks(request)
    return render(
        request,
        "key_health/health.html",
        {
            "checks": checks,
            "needing_attention": sum(1 for check in checks if check.count),
            "idle_days": request.workspace.key_idle_days,
        },
    )
