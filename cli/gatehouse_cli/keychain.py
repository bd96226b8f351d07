"""The key in the operating system's keychain (the Secret Service on Linux, the macOS Keychain,
Windows' Credential Locker) through `keyring`, as `gh` keeps its token: each call waits at most
WAIT_SECONDS, since a keychain that is locked or absent may never answer."""

import os
import threading
from collections.abc import Callable
from typing import Any

SERVICE = "gatehouse"
WAIT_SECONDS = float(os.environ.get("GATEHOUSE_KEYCHAIN_WAIT_SECONDS", "3"))


class KeychainUnavailable(Exception):
    """No keychain answered; the message says why, in a few words."""


def _bounded(call: Callable[[Any], Any]) -> Any:
    """`call(keyring)` in a thread of its own, given WAIT_SECONDS to answer."""
    answer: dict[str, Any] = {}

    def work() -> None:
        try:
            import keyring  # noqa: PLC0415 - imported in the thread: its import may hang too

            answer["value"] = call(keyring)
        except Exception as error:  # noqa: BLE001 - any failure of a backend means "none"
            answer["error"] = error

    thread = threading.Thread(target=work, name="keychain", daemon=True)
    thread.start()
    thread.join(WAIT_SECONDS)
    if thread.is_alive():
        raise KeychainUnavailable(f"the system keychain did not answer within {WAIT_SECONDS:g} s")
    if "error" in answer:
        error = answer["error"]
        if type(error).__name__ == "NoKeyringError":
            raise KeychainUnavailable("no system keychain was found")
        raise KeychainUnavailable(f"the system keychain refused: {error}")
    return answer.get("value")


def store(account: str, secret: str) -> str:
    """Keep `secret` under `account` (the server's address); the keychain's name."""
    return str(
        _bounded(
            lambda keyring: (keyring.set_password(SERVICE, account, secret), _name(keyring))[1]
        )
    )


def fetch(account: str) -> str | None:
    value = _bounded(lambda keyring: keyring.get_password(SERVICE, account))
    return value if isinstance(value, str) else None


def delete(account: str) -> None:
    def remove(keyring: Any) -> None:
        if keyring.get_password(SERVICE, account) is not None:
            keyring.delete_password(SERVICE, account)

    _bounded(remove)


def _name(keyring: Any) -> str:
    backend = keyring.get_keyring()
    names = {
        "SecretService": "the system keychain (Secret Service)",
        "macOS": "the macOS Keychain",
        "Windows": "the Windows Credential Locker",
    }
    module = type(backend).__module__.rsplit(".", 1)[-1]
    return names.get(module, f"the system keychain ({getattr(backend, 'name', module)})")
