from typing import TYPE_CHECKING

from django.contrib import admin

from .models import User

if TYPE_CHECKING:
    ModelAdminBase = admin.ModelAdmin[User]  # generic in django-stubs only
else:
    ModelAdminBase = admin.ModelAdmin


@admin.register(User)
class UserAdmin(ModelAdminBase):
    list_display = ["email", "full_name", "is_staff", "date_joined"]
    search_fields = ["email", "full_name"]
    exclude = ["password"]
