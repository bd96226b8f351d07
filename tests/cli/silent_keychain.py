"""A keyring backend that never answers, as a keychain locked behind a prompt nobody sees:
`PYTHON_KEYRING_BACKEND=silent_keychain.SilentKeychain` (test_keychain.py)."""

import threading

from keyring.backend import KeyringBackend


class SilentKeychain(KeyringBackend):
    priority = 1

    def get_password(self, service: str, username: str) -> str | None:
        threading.Event().wait()
        return None

    def set_password(self, service: str, username: str, password: str) -> None:
        threading.Event().wait()

    def delete_password(self, service: str, username: str) -> None:
        threading.Event().wait()
