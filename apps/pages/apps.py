from typing import Any
from uuid import UUID

from django.apps import AppConfig
from django.db.models import QuerySet


class PagesConfig(AppConfig):
    name = "apps.pages"
    label = "pages"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.api_keys.choosable import ChoosableGroup, register_choosable

        from .models import Page

        def objects(workspace_id: UUID, member_id: int | None) -> QuerySet[Any]:
            return Page.objects.filter(workspace_id=workspace_id)

        register_choosable(ChoosableGroup("pages", "pages.Page", objects, noun="page"))
