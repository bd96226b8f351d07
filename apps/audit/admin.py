from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.http import HttpRequest

from .models import AuditEvent

if TYPE_CHECKING:
    ModelAdminBase = admin.ModelAdmin[Any]  # generic in django-stubs only
else:
    ModelAdminBase = admin.ModelAdmin


class ReadOnlyAdmin(ModelAdminBase):
    """Staff may look, never touch: the log is append-only and keys change only through
    their services."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "workspace", "action", "actor_label", "subject", "ip"]
    list_filter = ["action"]
    search_fields = ["actor_label", "subject"]
    date_hierarchy = "created_at"
