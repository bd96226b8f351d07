from django.apps import AppConfig


class McpConfig(AppConfig):
    name = "apps.mcp"
    label = "mcp"
    verbose_name = "MCP server machinery"
