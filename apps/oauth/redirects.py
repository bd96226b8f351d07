"""Where a connected app may be sent back to: https, http to this machine (RFC 8252 §7.3), or
a native app's own scheme (§7.1, such as Cursor's cursor://), never a scheme the browser runs,
reads or opens itself (x-safari-https://, microsoft-edge:https://…); checked at registration and
in client ID metadata documents."""

import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit


def is_loopback_uri(uri: str) -> bool:
    """An http redirect to this machine (RFC 8252 §7.3): matched on any port. Spelled exactly
    `http://` (urlsplit would forgive leading spaces and an upper-case scheme)."""
    if not uri.startswith("http://") or any(ch.isspace() or ord(ch) < 0x20 for ch in uri):
        return False
    return urlsplit(uri).hostname in ("127.0.0.1", "::1", "localhost")


def _loopback_parts(uri: str) -> tuple[str, str, str, str] | None:
    """(scheme, host, path, query) of a well-formed loopback redirect: no userinfo, no
    fragment, a port from 1 to 65535 if any; None otherwise."""
    parts = urlsplit(uri)
    try:
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname or ""
    bare = f"[{host}]" if ":" in host else host
    if parts.fragment or parts.netloc not in (bare, f"{bare}:{port}") or port == 0:
        return None
    return parts.scheme, host, parts.path, parts.query


def redirect_uri_matches(registered: str, presented: str) -> bool:
    """Exact match, except that a loopback redirect may come back on any port (RFC 8252 §7.3):
    same scheme, host, path and query, no userinfo and no fragment."""
    if registered == presented:
        return True
    if not (is_loopback_uri(registered) and is_loopback_uri(presented)):
        return False
    a, b = _loopback_parts(registered), _loopback_parts(presented)
    return a is not None and a == b


MAX_REDIRECT_URIS = 10
# RFC 3986's characters, without the ones a page or a header would have to escape.
URI_CHARACTERS = re.compile(r"[A-Za-z0-9\-._~:/?\[\]@!$&()*+,;=%']+")
HOST = re.compile(r"[a-z0-9.-]+|[0-9a-f:.]+")  # a name, an IPv4 or an IPv6 address
BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
SCHEME = re.compile(r"[a-z][a-z0-9+.-]{0,63}")  # RFC 3986 §3.1, lower case as compared
# Schemes a browser runs, reads or opens itself rather than handing to an app: a code sent
# there would run as script, land in a file or a socket, or go nowhere the app can read.
BROWSER_SCHEMES = frozenset(
    {
        "javascript", "vbscript", "data", "file", "blob", "about", "filesystem", "ws", "wss",
        "ftp", "view-source", "chrome", "chrome-extension", "edge", "moz-extension", "resource",
        "jar", "mailto", "tel", "sms", "urn", "intent",
        # Schemes that hand an address to a browser, which opens it: the code would go to
        # any https page named after them (microsoft-edge:https://evil.example/).
        "microsoft-edge", "microsoft-edge-http", "microsoft-edge-https", "x-safari-http",
        "x-safari-https", "googlechrome", "googlechromes", "firefox", "firefox-focus", "focus",
        "brave", "opera", "opera-http", "opera-https", "duckduckgo", "x-web-search",
        "android-app", "ms-browser-extension", "edge-http", "edge-https",
    }
)  # fmt: skip
# A scheme naming http in it (x-safari-https, opera-http), or an address whose rest is itself
# a web address (microsoft-edge:https://…): a browser's, whatever the list above misses.
EMBEDDED_WEB_ADDRESS = re.compile(r"/*https?:", re.IGNORECASE)
HTTP_PART = re.compile(r"(^|[-.+])https?($|[-.+])")


def is_browser_scheme(uri: str) -> bool:
    """Whether `uri`'s scheme is one a browser runs, reads or opens (BROWSER_SCHEMES), names
    http itself, or carries a web address right after it."""
    scheme, _, rest = uri.partition(":")
    scheme = scheme.strip().lower()
    return (
        scheme in BROWSER_SCHEMES
        or (HTTP_PART.search(scheme) is not None and scheme not in ("http", "https"))
        or (scheme not in ("http", "https") and EMBEDDED_WEB_ADDRESS.match(rest) is not None)
    )


RESPONSE_PARAMETERS = frozenset({"code", "state", "iss", "error", "error_description", "error_uri"})


def is_private_use_uri(uri: str) -> bool:
    """A native app's own scheme (RFC 8252 §7.1: `cursor://…/callback`, `com.example.app:/cb`):
    the operating system hands the answer to the app that claimed the scheme."""
    scheme = urlsplit(uri).scheme
    return scheme not in ("http", "https") and not is_browser_scheme(uri)


def redirect_uri_problem(uri: Any) -> str | None:
    """What makes one redirect address unusable, in a sentence naming it; None when it is
    https, http to this machine (RFC 8252 §7.3), or a native app's own scheme (§7.1)."""
    if not isinstance(uri, str):
        return "redirect_uris must be strings."
    scheme = uri.split(":", 1)[0] if ":" in uri else ""
    if ":" in uri and is_browser_scheme(uri):
        return (
            f"{_quoted(uri)} uses {scheme.strip().lower()}:, a scheme a browser runs, reads or "
            "opens itself; use https, http to 127.0.0.1 or localhost, or your app's own scheme."
        )
    if not SCHEME.fullmatch(scheme):  # lower case, as it will be matched exactly
        return f"{_quoted(uri)} is not an absolute address (scheme:…)."
    parts = urlsplit(uri)
    native = scheme not in ("http", "https")
    if (
        (not parts.hostname and not native)
        or (native and not (parts.netloc or parts.path.strip("/")))
        or parts.fragment
        or len(uri) > 2000
        or not uri.isascii()  # international names come as A-labels (xn--…)
        or any(ch.isspace() or ord(ch) < 0x20 for ch in uri)
        or parts.username is not None
        or not URI_CHARACTERS.fullmatch(uri)
        or (parts.hostname is not None and not HOST.fullmatch(parts.hostname))
    ):
        return f"{_quoted(uri)} is not an absolute address without a fragment."
    try:
        parts.port  # noqa: B018 - raises for a port out of range
    except ValueError:
        return f"{_quoted(uri)} has an invalid port."
    if BAD_PERCENT.search(uri):
        return f"{_quoted(uri)} has a % that is not followed by two hexadecimal digits."
    if RESPONSE_PARAMETERS & {name for name, _ in parse_qsl(parts.query)}:
        # The answer adds them: a second `iss` or `state` could be read in its place.
        return f"{_quoted(uri)} must not carry code, state, error or iss itself."
    if scheme == "http" and not is_loopback_uri(uri):
        return f"{_quoted(uri)} must use https, or http to 127.0.0.1 or localhost."
    return None


def _quoted(uri: str) -> str:
    return repr(uri[:200])


def redirect_uris_clean(value: Any) -> list[str]:
    """The redirect addresses an app declares, every one usable (`redirect_uri_problem`).
    ValueError names the first that is not."""
    if not isinstance(value, list) or not value or len(value) > MAX_REDIRECT_URIS:
        raise ValueError(f"redirect_uris must list 1 to {MAX_REDIRECT_URIS} addresses.")
    for uri in value:
        if problem := redirect_uri_problem(uri):
            raise ValueError(problem)
    return list(value)
