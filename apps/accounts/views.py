from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from .models import SignedInRequest
from .security_log import KEPT


@require_GET
@login_required
def security_log(request: SignedInRequest) -> HttpResponse:
    """The signed-in person's own security log: sign-ins, failures, factor and password changes."""
    events = request.user.account_events.all()[:KEPT]
    return render(request, "accounts/security_log.html", {"events": events, "kept": KEPT})
