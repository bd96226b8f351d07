from django.contrib import admin

from .models import AuditEvent


class ReadOnlyAdmin(admin.ModelAdmin):
    """Staff may look, never touch: the log is append-only and keys change only through
    their services."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "workspace", "action", "actor_label", "subject", "ip"]
    list_filter = ["action"]
    search_fields = ["actor_label", "subject"]
    date_hierarchy = "created_at"
