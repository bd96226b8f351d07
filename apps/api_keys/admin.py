from django.contrib import admin

from apps.audit.admin import ReadOnlyAdmin

from .models import ApiKey


@admin.register(ApiKey)
class ApiKeyAdmin(ReadOnlyAdmin):
    list_display = [
        "name",
        "hint",
        "kind",
        "tag",
        "workspace",
        "user",
        "created_at",
        "expires_at",
        "revoked_at",
        "last_used_at",
    ]
    list_filter = ["kind", "tag"]
    search_fields = ["name", "hint", "user__email"]
    exclude = ["secret_hash"]  # not a secret, but of no use to anyone reading
