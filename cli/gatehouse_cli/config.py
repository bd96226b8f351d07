"""Where the CLI keeps its key: the system keychain (keychain.py) when one answers, else (or
with --insecure-storage) $XDG_CONFIG_HOME/gatehouse/credentials.json, mode 0600, which also
holds the rest: the server, the installation's id, the key's name and expiry."""

import json
import os
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path

from platformdirs import user_config_dir

from . import keychain

DEFAULT_URL = "http://127.0.0.1:8000"


class ConfigError(Exception):
    """The stored configuration cannot be used; the message says what to do."""


def config_dir() -> Path:
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return Path(xdg) / "gatehouse" if xdg else Path(user_config_dir("gatehouse"))


def credentials_path() -> Path:
    return config_dir() / "credentials.json"


@dataclass
class Credentials:
    url: str | None = None
    api_key: str | None = None
    installation_id: str | None = None
    key_expires_at: str | None = None  # ISO time, from the login's expires_in
    key_name: str | None = None  # the name the server gave the key: the device's
    storage: str | None = None  # "keychain" (the key is not in the file) or "file"
    kept_in: str | None = None  # where, in words: the keychain's name


def load() -> Credentials:
    """The stored credentials; refused if anyone but the owner can read the file."""
    path = credentials_path()
    if not path.exists():
        return Credentials()
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(
            f"{path} can be read by other users (mode {mode:04o}); it holds your key. "
            f"Run: chmod 600 {path}"
        )
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ConfigError(
            f"{path} is not readable JSON ({error}); delete it and log in again."
        ) from None
    return Credentials(
        url=data.get("url"),
        api_key=data.get("api_key"),
        installation_id=data.get("installation_id"),
        key_expires_at=data.get("key_expires_at"),
        key_name=data.get("key_name"),
        storage=data.get("storage"),
        kept_in=data.get("kept_in"),
    )


def save(credentials: Credentials) -> Path:
    """Write the credentials, created with mode 0600 (never briefly readable by others)."""
    path = credentials_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    data = dict(credentials.__dict__)
    if credentials.storage == "keychain":
        del data["api_key"]  # in the keychain only
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle, indent=2)
    os.chmod(temporary, 0o600)
    os.replace(temporary, path)
    return path


def installation_id(credentials: Credentials) -> str:
    """A random id for this installation, kept across logins: the server revokes the previous
    key of the same installation when a new one is issued."""
    if not credentials.installation_id:
        credentials.installation_id = uuid.uuid4().hex
    return credentials.installation_id


def effective_url(credentials: Credentials, option: str | None) -> str:
    """--url, then GATEHOUSE_URL, then the address of the last login, then the local default."""
    url = option or os.environ.get("GATEHOUSE_URL") or credentials.url or DEFAULT_URL
    return url.rstrip("/")


def effective_key(credentials: Credentials) -> str | None:
    """GATEHOUSE_API_KEY, else the key of the last login; with GATEHOUSE_REQUIRE_KEYCHAIN=1, a
    key kept in the file is refused."""
    if os.environ.get("GATEHOUSE_API_KEY"):
        return os.environ["GATEHOUSE_API_KEY"]
    if credentials.storage == "file" and credentials.api_key and keychain_required():
        raise ConfigError(
            f"GATEHOUSE_REQUIRE_KEYCHAIN is set, and your key is kept in {credentials_path()}. "
            "Run `gatehouse logout`, then `gatehouse login` with a system keychain unlocked."
        )
    return stored_key(credentials)


def keychain_required() -> bool:
    """GATEHOUSE_REQUIRE_KEYCHAIN=1: keep and read the key in the system keychain only."""
    return os.environ.get("GATEHOUSE_REQUIRE_KEYCHAIN", "").strip().lower() in ("1", "true", "yes")


def check_keychain() -> None:
    """ConfigError unless the system keychain answers now."""
    try:
        keychain.fetch("gatehouse-check")
    except keychain.KeychainUnavailable as error:
        raise ConfigError(
            f"The key may be kept only in the system keychain, but {error}. Unlock or start "
            "it and log in again; nothing was stored."
        ) from None


def stored_key(credentials: Credentials) -> str | None:
    """The key of the last login, from the keychain when it is kept there."""
    if credentials.api_key is None and credentials.storage == "keychain" and credentials.url:
        try:
            credentials.api_key = keychain.fetch(credentials.url)
        except keychain.KeychainUnavailable as error:
            raise ConfigError(
                f"Your key is kept in {credentials.kept_in or 'the system keychain'}, but {error}. "
                "Unlock it, or log in again (`gatehouse login --insecure-storage` keeps the key "
                "in a file instead)."
            ) from None
    return credentials.api_key


def keep_key(
    credentials: Credentials, secret: str, *, insecure: bool, secure: bool = False
) -> str | None:
    """Store the key of a login: in the keychain unless `insecure` or none answers, then in
    the credentials file (never when `secure`: ConfigError, nothing stored). Returns what to
    say once when the keychain was passed over."""
    credentials.api_key = secret
    notice = None
    if not insecure:
        try:
            credentials.kept_in = keychain.store(credentials.url or "", secret)
            credentials.storage = "keychain"
            save(credentials)
            return None
        except keychain.KeychainUnavailable as error:
            if secure:
                credentials.api_key = None
                raise ConfigError(
                    f"The key may be kept only in the system keychain, but {error}. The new "
                    "key was revoked; unlock the keychain and log in again."
                ) from None
            notice = (
                f"Stored the key in {credentials_path()} (mode 0600, readable by you alone) "
                f"instead of the system keychain: {error}. "
                "`gatehouse login --insecure-storage` chooses the file without trying."
            )
    credentials.storage, credentials.kept_in = "file", f"{credentials_path()} (mode 0600)"
    save(credentials)
    return notice


def forget_key(credentials: Credentials) -> None:
    """Delete the key of the last login wherever it is kept; the rest stays."""
    if credentials.storage == "keychain" and credentials.url:
        try:
            keychain.delete(credentials.url)
        except keychain.KeychainUnavailable as error:
            raise ConfigError(f"The key was revoked, but {error}: it is still there.") from None
    credentials.api_key = credentials.key_expires_at = credentials.key_name = None
    credentials.storage = credentials.kept_in = None
    save(credentials)
