from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from config.openapi import OPENAPI_FILE, render_openapi


class Command(BaseCommand):
    help = "Print the OpenAPI document, or write it to config/openapi.json with --write."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--write", action="store_true", help="update the committed copy")

    def handle(self, *args: Any, write: bool, **options: Any) -> None:
        document = render_openapi()
        if write:
            OPENAPI_FILE.write_text(document, encoding="utf-8")
            self.stdout.write(f"Wrote {OPENAPI_FILE}.")
        else:
            self.stdout.write(document, ending="")
