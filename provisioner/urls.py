"""Rules for the URLs provision writes or connects to. Pure: no network, no httpx.

A URL written into Open WebUI (a backend's, an icon's) is shown in every diff and, for icons, to
every chat user; a key in it would leak there. Plain http is only safe where nothing crosses the
network: loopback.

Layer: vocabulary.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import parse_qsl, urlsplit

# Words that make a query parameter a credential (`api_key`, `apiKey`, `access_token`,
# `X-Amz-Signature`, `sig`, `client_secret`, `password`): any word of the name, split at `-`, `_`,
# `.` and camelCase, or the whole name run together.
_SECRET_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "accesstoken",
        "apitoken",
        "authtoken",
        "secret",
        "clientsecret",
        "sig",
        "signature",
        "password",
        "passwd",
        "pwd",
        "pass",
        "auth",
        "authorization",
        "credential",
        "credentials",
        "jwt",
        "session",
        "sessionid",
        "bearer",
    }
)
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses; a name that only resolves there is not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def credential_in_url(url: str) -> str | None:
    """Why `url` carries a credential (userinfo, or a query parameter named like one), or None."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if "@" in parts.netloc:
        return "a user or password in the URL"
    for name, _ in parse_qsl(parts.query, keep_blank_values=True) + parse_qsl(parts.fragment, keep_blank_values=True):
        words = {w.lower() for w in _WORD.findall(name)} | {re.sub(r"[^a-z0-9]", "", name.lower())}
        if words & _SECRET_WORDS:
            return f"the query parameter {name!r} looks like a credential"
    return None


def plain_http_host(url: str) -> str | None:
    """The host of a plain-http URL that is not loopback (its traffic crosses the network), or None."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return None
    if parts.scheme.lower() == "http" and not is_loopback(host):
        return host
    return None
