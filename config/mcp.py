"""The MCP door of this site (apps/mcp/door.py), built from the operations list."""

from apps.mcp.door import mcp_endpoint_for

from .operations import OPERATIONS

mcp_endpoint = mcp_endpoint_for(OPERATIONS)
TOOLS = mcp_endpoint.toolbox.tools  # type: ignore[attr-defined]
