"""Settings → Audit streaming (owners): the streams with their lag, last delivery and last
error; add one (an HTTPS stream's secret shown once), send a test event, pause, remove."""

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from apps.accounts.sudo import recent_authentication_required
from apps.audit.services import request_actor
from apps.common.validation import InvalidInput
from apps.workspaces.decorators import WorkspaceRequest, workspace_staff_required

from .devreceiver import dev_stream_receiver_url
from .forms import HttpsStreamForm, StreamForm, SyslogStreamForm
from .models import AuditStream
from .records import streams_status
from .services import (
    stream_create,
    stream_delete,
    stream_send_test,
    stream_set_enabled,
)

REMOVE_MESSAGE = "Its waiting events will not be sent. The audit log itself is kept."
FIELDS = {"caCertificate": "ca_certificate", "streams": None, "kind": None}


def _stream(request: WorkspaceRequest, stream_id: int) -> AuditStream:
    return get_object_or_404(
        AuditStream.objects.select_related("workspace"), pk=stream_id, workspace=request.workspace
    )


def _add(request: WorkspaceRequest, form: StreamForm) -> HttpResponse | None:
    """Add the stream of a valid form: the secret page, a redirect, or None (errors shown)."""
    data = form.cleaned_data
    try:
        made = stream_create(
            request.workspace,
            kind="https" if isinstance(form, HttpsStreamForm) else "syslog",
            name=data["name"],
            actor=request_actor(request),
            events=data["events"],
            url=data.get("url", ""),
            headers=data.get("headers"),
            host=data.get("host", ""),
            port=data.get("port"),
            ca_certificate=data.get("ca_certificate", ""),
        )
    except InvalidInput as exc:
        field = FIELDS.get(exc.field, exc.field)
        form.add_error(field if field in form.fields else None, exc.message)
        return None
    if made.secret is None:
        messages.success(request, f"Audit stream “{made.stream.name}” added.")
        return redirect("audit_streams:list")
    response = render(
        request, "audit_streams/secret.html", {"stream": made.stream, "secret": made.secret}
    )
    response["Cache-Control"] = "no-store"
    return response


@require_http_methods(["GET", "POST"])
@workspace_staff_required(owner_only=True)
@recent_authentication_required(allow_get=True)  # a new stream receives every event
def stream_list(request: WorkspaceRequest) -> HttpResponse:
    kind = request.POST.get("kind") if request.method == "POST" else None
    dev_receiver = dev_stream_receiver_url(request)
    trying = dev_receiver and request.GET.get("try") == "dev-receiver"
    https = HttpsStreamForm(
        request.POST if kind == "https" else None,
        prefix="https",
        initial={"name": "Development receiver", "url": dev_receiver} if trying else None,
    )
    syslog = SyslogStreamForm(request.POST if kind == "syslog" else None, prefix="syslog")
    bound = https if kind == "https" else syslog if kind == "syslog" else None
    if bound is not None and bound.is_valid():
        answer = _add(request, bound)
        if answer is not None:
            return answer
    streams = streams_status(request.workspace)
    return render(
        request,
        "audit_streams/list.html",
        {
            "streams": streams,
            "https_form": https,
            "syslog_form": syslog,
            "keep_days": settings.AUDIT_STREAM_DAYS,
            "dev_receiver": dev_receiver,
            # Events on their way (not a failing stream's, which waits minutes): the list
            # refreshes itself until they are sent.
            "waiting": any(s.backlog and s.state == "active" for s in streams),
        },
        status=400 if bound is not None else 200,
    )


@require_http_methods(["POST"])
@workspace_staff_required(owner_only=True)
def stream_test(request: WorkspaceRequest, stream_id: int) -> HttpResponse:
    stream = _stream(request, stream_id)
    event_id, failure = stream_send_test(stream, actor=request_actor(request))
    if failure:
        messages.error(request, f"Test event {event_id} did not reach “{stream.name}”: {failure}")
    else:
        paused = "" if stream.enabled else " The stream itself stays paused."
        messages.success(
            request,
            f"Test event {event_id} delivered to “{stream.name}”, ahead of any waiting.{paused}",
        )
    return redirect("audit_streams:list")


@require_http_methods(["POST"])
@workspace_staff_required(owner_only=True)
@recent_authentication_required
def stream_toggle(request: WorkspaceRequest, stream_id: int) -> HttpResponse:
    stream = _stream(request, stream_id)
    resume = not stream.enabled
    stream_set_enabled(stream, resume, actor=request_actor(request))
    if resume:
        messages.success(request, f"“{stream.name}” resumed: its waiting events are sent now.")
    else:
        messages.success(request, f"“{stream.name}” paused: its events wait for it.")
    return redirect("audit_streams:list")


@require_http_methods(["GET", "POST"])
@workspace_staff_required(owner_only=True)
@recent_authentication_required(allow_get=True)
def stream_remove(request: WorkspaceRequest, stream_id: int) -> HttpResponse:
    """GET asks for confirmation (the path without JavaScript); POST removes."""
    stream = _stream(request, stream_id)
    if request.method == "GET":
        return render(
            request,
            "confirm.html",
            {
                "title": f"Remove “{stream.name}”?",
                "message": REMOVE_MESSAGE,
                "action_label": "Remove stream",
                "cancel_url": reverse("audit_streams:list"),
            },
        )
    stream_delete(stream, actor=request_actor(request))
    messages.success(request, f"Audit stream “{stream.name}” removed.")
    return redirect("audit_streams:list")
