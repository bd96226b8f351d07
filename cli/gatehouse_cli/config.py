"""Where the CLI keeps its key: $XDG_CONFIG_HOME/gatehouse/credentials.json, mode 0600."""

import json
import os
import stat
import uuid
from dataclasses import dataclass
from pathlib import Path

from platformdirs import user_config_dir

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
    )


def save(credentials: Credentials) -> Path:
    """Write the credentials, created with mode 0600 (never briefly readable by others)."""
    path = credentials_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(credentials.__dict__, handle, indent=2)
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
    return os.environ.get("GATEHOUSE_API_KEY") or credentials.api_key
