"""The Key health page: a glance at what needs attention, each count one click from the list
where it can be acted on, and one click from acting on all it counts (confirmed on a page
that names them)."""

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods

from apps.audit.services import request_actor
from apps.common.validation import parse_id
from apps.workspaces.decorators import WorkspaceRequest, workspace_staff_required

from .actions import ACTS, DONE, VERBS, carry_out, plan
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
            "tiles": [
                (check, VERBS[ACTS[check.slug]] if check.slug in ACTS else None) for check in checks
            ],
            "needing_attention": sum(1 for check in checks if check.count),
            "idle_days": request.workspace.key_idle_days,
        },
    )


@require_http_methods(["GET", "POST"])
@workspace_staff_required()
def key_health_act(request: WorkspaceRequest, slug: str) -> HttpResponse:
    """GET: every key (or service account) the check counts and what acting on all does to
    each; POST: do it to the ones that page named which the check still counts."""
    if slug not in ACTS:
        raise Http404("No such check.")
    check = next((c for c in health_checks(request) if c.slug == slug), None)
    if check is None:  # "revoked soon as idle" exists only under an idle policy
        raise Http404("No such check.")
    act = ACTS[slug]
    if request.method == "GET":
        planned = plan(request, slug)
        return render(
            request,
            "key_health/act.html",
            {
                "check": check,
                "act": act,
                "verb": VERBS[act],
                "planned": planned,
                "acting": [p for p in planned if not p.skipped],
                "noun": "service account" if act == "delete" else "key",
            },
        )
    ids = [i for raw in request.POST.getlist("ids") if (i := parse_id(raw))]
    outcome = carry_out(request, slug, ids, request_actor(request))
    done, noun = len(outcome.done), "service account" if act == "delete" else "key"
    text = f"{DONE[act]} {done} {noun}{pluralize(done)}."
    if outcome.left_out:
        text += f" {outcome.left_out} no longer counted here, so left as they were."
    for item, reason in outcome.refused:
        messages.error(request, f"{item.subject.name}: {reason}")
    (messages.success if done else messages.info)(request, text)
    if act != "recreate" or not outcome.created:
        return redirect("key_health:page")
    response = render(
        request,
        "key_health/recreated.html",
        {"check": check, "created": outcome.created},
    )
    add_never_cache_headers(response)  # the secrets, shown this once
    return response
