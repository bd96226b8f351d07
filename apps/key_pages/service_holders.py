"""A key made on the create page for a service account (docs/product.md §12): owners only, the
account named by `service_account` in the query or the form."""

from django.core.exceptions import PermissionDenied
from django.http import Http404

from apps.common.validation import parse_id
from apps.workspaces.decorators import WorkspaceRequest
from apps.workspaces.models import Membership, ServiceAccount

from .pages import KeyPages


def service_account_for_new_key(
    request: WorkspaceRequest, pages: KeyPages
) -> ServiceAccount | None:
    """The service account the create page makes a key for, or None for the signed-in user's
    own key; 403 for anyone but an owner, 404 for an account not of this workspace."""
    raw = request.POST.get("service_account") or request.GET.get("service_account")
    if not raw or pages.member:
        return None
    if request.membership.role != Membership.Role.OWNER:
        raise PermissionDenied("Only owners make service accounts' keys.")
    account_id = parse_id(raw)
    account = (
        ServiceAccount.objects.filter(
            workspace=request.workspace, pk=account_id or 0, deleted_at__isnull=True
        )
        .select_related("user")
        .first()
    )
    if account is None:
        raise Http404("No such service account in this workspace.")
    return account
