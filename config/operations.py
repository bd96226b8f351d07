"""Every operation of the API, collected from the apps: the one list the doors are built from.

A new operation is one declaration in its app's `operations.py` (and its service); the HTTP
routes (`config/api.py`), the OpenAPI document (`config/openapi.py`) and the MCP tools
(`apps/mcp`, through `config/mcp.py`) follow from this list without further changes.
"""

from apps.api.operations import Operation
from apps.approvals.operations import OPERATIONS as APPROVAL_OPERATIONS
from apps.audit_streams.operations import OPERATIONS as AUDIT_STREAM_OPERATIONS
from apps.communities.operations import OPERATIONS as COMMUNITY_OPERATIONS
from apps.key_operations.operations import OPERATIONS as KEY_OPERATIONS
from apps.pages.operations import OPERATIONS as PAGE_OPERATIONS
from apps.products.operations import OPERATIONS as PRODUCT_OPERATIONS
from apps.request_log.operations import OPERATIONS as REQUEST_LOG_OPERATIONS
from apps.scim.operations import OPERATIONS as SCIM_TOKEN_OPERATIONS
from apps.service_accounts.operations import OPERATIONS as SERVICE_ACCOUNT_OPERATIONS
from apps.sso.operations import OPERATIONS as SSO_OPERATIONS
from apps.usage.quota_operations import OPERATIONS as QUOTA_OPERATIONS
from apps.workspaces.operations import OPERATIONS as WORKSPACE_OPERATIONS

OPERATIONS: tuple[Operation, ...] = (
    *WORKSPACE_OPERATIONS,
    *PRODUCT_OPERATIONS,
    *COMMUNITY_OPERATIONS,
    *PAGE_OPERATIONS,
    *KEY_OPERATIONS,
    *QUOTA_OPERATIONS,
    *APPROVAL_OPERATIONS,
    *REQUEST_LOG_OPERATIONS,
    *SERVICE_ACCOUNT_OPERATIONS,
    *AUDIT_STREAM_OPERATIONS,
    *SCIM_TOKEN_OPERATIONS,
    *SSO_OPERATIONS,
)
OPERATIONS_BY_NAME: dict[str, Operation] = {op.name: op for op in OPERATIONS}
assert len(OPERATIONS_BY_NAME) == len(OPERATIONS), "two operations share a name"
