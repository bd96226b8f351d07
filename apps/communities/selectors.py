from django.db.models import QuerySet

from apps.api_keys.choosable import limited_to_key
from apps.api_keys.models import ApiKey

from .models import Community


def communities_for_key(key: ApiKey) -> QuerySet[Community]:
    """The communities a key may see: all of its workspace's, or a member key's own; of those,
    only the chosen ones when the key is limited to selected communities."""
    communities = Community.objects.filter(workspace_id=key.workspace_id)
    if key.kind == ApiKey.Kind.MEMBER:
        communities = communities.filter(memberships__user_id=key.user_id)
    return limited_to_key(communities, key, "communities")
