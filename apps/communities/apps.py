from typing import Any
from uuid import UUID

from django.apps import AppConfig
from django.db.models import QuerySet


class CommunitiesConfig(AppConfig):
    name = "apps.communities"
    label = "communities"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.api_keys.choosable import ChoosableGroup, register_choosable

        from .models import Community

        def objects(workspace_id: UUID, member_id: int | None) -> QuerySet[Any]:
            communities = Community.objects.filter(workspace_id=workspace_id)
            if member_id is not None:
                communities = communities.filter(memberships__user_id=member_id)
            return communities

        register_choosable(
            ChoosableGroup("communities", "communities.Community", objects, noun="community")
        )
