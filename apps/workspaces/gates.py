"""Conditions an app above this one puts on opening a workspace in the dashboard (apps.sso:
a workspace that requires single sign-on opens only to a session signed in through its
provider). Each gate answers a response that stops the request, or None to let it through."""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from .models import Membership

WorkspaceGate = Callable[[HttpRequest, Membership], HttpResponse | None]
_gates: list[WorkspaceGate] = []


def register_workspace_gate(gate: WorkspaceGate) -> None:
    if gate not in _gates:
        _gates.append(gate)


def workspace_gate_refusal(request: HttpRequest, membership: Membership) -> HttpResponse | None:
    """The first gate's refusal of `membership`'s workspace for this request, or None."""
    for gate in _gates:
        if (refusal := gate(request, membership)) is not None:
            return refusal
    return None
