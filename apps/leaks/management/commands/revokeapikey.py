from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.api_keys.services import api_key_revoke
from apps.audit.services import Actor
from apps.leaks.old_secrets import old_secret_grace_end
from apps.leaks.secrets import api_key_find_by_secret


class Command(BaseCommand):
    help = "Revoke the key a secret belongs to (what an operator does with a leaked key)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("secret", help="the leaked secret")

    def handle(self, *args: Any, secret: str, **options: Any) -> None:
        key = api_key_find_by_secret(secret.strip())
        if key is None:
            # Never echo the secret: the terminal's scrollback and CI logs are places it leaks to.
            raise CommandError(
                "No key matches this secret (check for a typo or a truncated copy; a secret "
                "replaced by a roll matches nothing once its grace period has ended)."
            )
        actor = Actor.of_operator("revokeapikey")
        if key.revoked_at is not None:
            self.stdout.write(
                f"Key {key.name!r} ({key.hint}) was already revoked "
                f"at {key.revoked_at.isoformat()}."
            )
        else:
            api_key_revoke(key=key, actor=actor)
            self.stdout.write(
                f"Revoked key {key.name!r} ({key.hint}) of {key.user.email} in workspace "
                f"{key.workspace_id}; it no longer authenticates."
            )
        # The secret of a key handed over to a service account acts as the new key during the
        # hand-over's grace: naming it here ends that too.
        if ended := old_secret_grace_end(secret.strip(), named=key, actor=actor, reason="revoked"):
            self.stdout.write(
                f"Ended the hand-over grace of {ended} key{'s' if ended > 1 else ''}: this "
                "secret no longer acts as the service account's key."
            )
