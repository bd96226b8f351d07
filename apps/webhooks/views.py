"""Settings → Webhooks (owners): endpoints, their secrets shown once, the delivery log."""

from django.contrib import messages
from django.db.models import Count, Max, Q
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from apps.accounts.sudo import recent_authentication_required
from apps.audit.services import request_actor
from apps.common.validation import InvalidInput
from apps.workspaces.decorators import WorkspaceRequest, workspace_staff_required

from .events import EVENT_TYPES
from .forms import EndpointEditForm, EndpointForm
from .models import WebhookDelivery, WebhookEndpoint
from .services import (
    EndpointWithSecret,
    delivery_redeliver,
    endpoint_create,
    endpoint_delete,
    endpoint_roll_secret,
    endpoint_send_test,
    endpoint_update,
)

LOG_SIZE = 50


def _endpoint(request: WorkspaceRequest, endpoint_id: int) -> WebhookEndpoint:
    return get_object_or_404(
        WebhookEndpoint.objects.select_related("workspace"),
        pk=endpoint_id,
        workspace=request.workspace,
    )


def _secret_page(request: WorkspaceRequest, made: EndpointWithSecret, title: str) -> HttpResponse:
    response = render(
        request,
        "webhooks/secret.html",
        {"endpoint": made.endpoint, "secret": made.secret, "title": title},
    )
    response["Cache-Control"] = "no-store"
    return response


@require_http_methods(["GET", "POST"])
@workspace_staff_required(owner_only=True)
@recent_authentication_required(allow_get=True)
def endpoint_list(request: WorkspaceRequest) -> HttpResponse:
    """The endpoints, and the form that adds one (its secret shown once on the next page)."""
    form = EndpointForm(request.POST or None, initial={"event_types": list(EVENT_TYPES)})
    if request.method == "POST" and form.is_valid():
        try:
            made = endpoint_create(
                request.workspace,
                url=form.cleaned_data["url"],
                event_types=form.cleaned_data["event_types"],
                description=form.cleaned_data["description"],
                actor=request_actor(request),
            )
        except InvalidInput as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            return _secret_page(request, made, "Endpoint added")
    endpoints = WebhookEndpoint.objects.filter(workspace=request.workspace).annotate(
        last_delivery=Max("deliveries__created_at"),
        pending=Count("deliveries", filter=Q(deliveries__status=WebhookDelivery.Status.PENDING)),
    )
    return render(request, "webhooks/list.html", {"endpoints": endpoints, "form": form})


@require_http_methods(["GET", "POST"])
@workspace_staff_required(owner_only=True)
@recent_authentication_required(allow_get=True)  # a new URL would receive every event
def endpoint_detail(request: WorkspaceRequest, endpoint_id: int) -> HttpResponse:
    """An endpoint's settings and its delivery log, newest first."""
    endpoint = _endpoint(request, endpoint_id)
    initial = {
        "url": endpoint.url,
        "description": endpoint.description,
        "event_types": endpoint.event_types,
        "enabled": endpoint.enabled,
    }
    form = EndpointEditForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            endpoint_update(endpoint, actor=request_actor(request), **form.cleaned_data)
        except InvalidInput as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        else:
            messages.success(request, "Endpoint saved.")
            return redirect("webhooks:detail", endpoint.pk)
    deliveries = list(endpoint.deliveries.prefetch_related("tries")[:LOG_SIZE])
    # A test event just queued (`?sent=` its moment; the worker writes its delivery) or a
    # delivery not tried yet: the log refreshes itself until it is sent, for a minute at most.
    waiting = any(d.status == "pending" and not d.attempts for d in deliveries)
    sent = request.GET.get("sent", "")
    if sent.isdigit() and 0 <= timezone.now().timestamp() - int(sent) < 60:
        waiting = waiting or not any(d.created_at.timestamp() >= int(sent) for d in deliveries)
    return render(
        request,
        "webhooks/detail.html",
        {
            "endpoint": endpoint,
            "form": form,
            "deliveries": deliveries,
            "waiting": waiting,
            "now": timezone.now(),
        },
    )


@require_http_methods(["POST"])
@workspace_staff_required(owner_only=True)
def endpoint_test(request: WorkspaceRequest, endpoint_id: int) -> HttpResponse:
    endpoint = _endpoint(request, endpoint_id)
    # Taken before the event: its delivery is stamped with the moment it was emitted, which a
    # second taken after could pass (the log then waited a minute for a delivery it showed).
    sent = int(timezone.now().timestamp())
    endpoint_send_test(endpoint, actor=request_actor(request))
    messages.success(request, "Test event queued: it shows in the log below within seconds.")
    detail = reverse("webhooks:detail", args=[endpoint.pk])
    return redirect(f"{detail}?sent={sent}")


@require_http_methods(["POST"])
@workspace_staff_required(owner_only=True)
@recent_authentication_required
def endpoint_roll(request: WorkspaceRequest, endpoint_id: int) -> HttpResponse:
    made = endpoint_roll_secret(_endpoint(request, endpoint_id), actor=request_actor(request))
    return _secret_page(request, made, "Secret rolled")


@require_http_methods(["POST"])
@workspace_staff_required(owner_only=True)
@recent_authentication_required
def endpoint_remove(request: WorkspaceRequest, endpoint_id: int) -> HttpResponse:
    endpoint = _endpoint(request, endpoint_id)
    endpoint_delete(endpoint, actor=request_actor(request))
    messages.success(request, f"Endpoint {endpoint.url} removed.")
    return redirect("webhooks:list")


@require_http_methods(["POST"])
@workspace_staff_required(owner_only=True)
def delivery_resend(request: WorkspaceRequest, endpoint_id: int, message_id: str) -> HttpResponse:
    endpoint = _endpoint(request, endpoint_id)
    delivery = get_object_or_404(WebhookDelivery, endpoint=endpoint, message_id=message_id)
    delivery_redeliver(delivery, actor=request_actor(request))
    messages.success(
        request, f"{delivery.event_type} queued again with its webhook-id {message_id}."
    )
    return redirect("webhooks:detail", endpoint.pk)
