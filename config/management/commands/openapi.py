from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from config.cli_table import CLI_TABLE_FILE, render_cli_table
from config.openapi import (
    OAUTH_OPENAPI_FILE,
    OPENAPI_FILE,
    render_oauth_openapi,
    render_openapi,
)


class Command(BaseCommand):
    help = (
        "Print the API's OpenAPI document, or with --write update config/openapi.json, the "
        "authorization server's config/oauth-openapi.json and the CLI's command table, "
        "cli/gatehouse_cli/operations.json."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--write", action="store_true", help="update the committed copy")

    def handle(self, *args: Any, write: bool, **options: Any) -> None:
        document = render_openapi()
        if write:
            OPENAPI_FILE.write_text(document, encoding="utf-8")
            OAUTH_OPENAPI_FILE.write_text(render_oauth_openapi(), encoding="utf-8")
            CLI_TABLE_FILE.write_text(render_cli_table(), encoding="utf-8")
            self.stdout.write(f"Wrote {OPENAPI_FILE}, {OAUTH_OPENAPI_FILE} and {CLI_TABLE_FILE}.")
        else:
            self.stdout.write(document, ending="")
