"""Copy-ready configurations for the doors a key opens: curl, MCP clients and the CLI.

The key itself never goes into a snippet on the list page: each client reads it from an
environment variable or prompts for it, so a configuration file can be shared or committed.
"""

import json
from dataclasses import dataclass

KEY_VARIABLE = "GATEHOUSE_API_KEY"


@dataclass(frozen=True)
class Snippet:
    id: str
    label: str
    where: str  # where the snippet goes, in a few words
    text: str


def mcp_client_snippets(mcp_url: str) -> list[Snippet]:
    """The Streamable HTTP configuration of the common MCP clients for this server, without a
    header: the client signs in by OAuth (its Connect button opens the consent page)."""
    cursor = {"mcpServers": {"gatehouse": {"url": mcp_url}}}
    vscode = {"servers": {"gatehouse": {"type": "http", "url": mcp_url}}}
    generic = {"type": "streamable-http", "url": mcp_url}
    return [
        Snippet(
            "mcp-claude-code",
            "Claude Code",
            "run in a terminal, then /mcp to sign in",
            f"claude mcp add --transport http gatehouse {mcp_url}",
        ),
        Snippet("mcp-cursor", "Cursor", "~/.cursor/mcp.json", json.dumps(cursor, indent=2)),
        Snippet("mcp-vscode", "VS Code", ".vscode/mcp.json", json.dumps(vscode, indent=2)),
        Snippet("mcp-other", "Any other client", "Streamable HTTP", json.dumps(generic, indent=2)),
    ]


def mcp_key_snippets(mcp_url: str) -> list[Snippet]:
    """The same configurations with a key in the Authorization header instead of a sign-in:
    for clients without OAuth, and for a key you manage yourself."""
    header = f"Bearer ${{env:{KEY_VARIABLE}}}"
    cursor = {"mcpServers": {"gatehouse": {"url": mcp_url, "headers": {"Authorization": header}}}}
    vscode = {
        "inputs": [
            {
                "type": "promptString",
                "id": "gatehouse-key",
                "description": "Gatehouse API key",
                "password": True,
            }
        ],
        "servers": {
            "gatehouse": {
                "type": "http",
                "url": mcp_url,
                "headers": {"Authorization": "Bearer ${input:gatehouse-key}"},
            }
        },
    }
    return [
        Snippet(
            "mcp-claude-code-key",
            "Claude Code",
            "run in a terminal",
            f"claude mcp add --transport http gatehouse {mcp_url} "
            f'--header "Authorization: Bearer ${KEY_VARIABLE}"',
        ),
        Snippet("mcp-cursor-key", "Cursor", "~/.cursor/mcp.json", json.dumps(cursor, indent=2)),
        Snippet("mcp-vscode-key", "VS Code", ".vscode/mcp.json", json.dumps(vscode, indent=2)),
    ]
