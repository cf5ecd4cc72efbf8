"""What went wrong, as the text the user reads."""

import http
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from agent_pipe.constants import MB, AgentHTTPError, EventTooLarge, PipeConfigError, StreamEndedEarly
from agent_pipe.secrets import Scrubber

# === failures: what went wrong, as the user reads it ==============================================


def _host(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = parts.hostname or url
        host = f"[{host}]" if ":" in host else host
        return f"{host}:{parts.port}" if parts.port else host
    except ValueError:
        return "its configured address"


# What a failed request raised, by class name, so the texts below hold for any HTTP client
# (aiohttp today; httpx's names are listed too).
_CONNECT_FAILURES = {"ConnectError", "ConnectTimeout", "ClientConnectorError", "ConnectionTimeoutError"}
_TRANSPORT_FAILURES = {"TransportError", "ClientError"}


def _kinds(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _connect_reason(exc: BaseException) -> str:
    chain: list[BaseException] = []  # the client wraps the socket's error: read the whole chain
    cause: BaseException | None = exc
    while cause is not None and len(chain) < 5:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    text = " ".join(str(e) for e in chain).lower()
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return "connection refused: nothing listens there"
    if _kinds(exc) & {"ConnectTimeout", "ConnectionTimeoutError"} or "timed out" in text:
        return "connecting timed out"
    if "refused" in text:
        return "connection refused: nothing listens there"
    if any(s in text for s in ("name or service not known", "nodename nor servname", "name resolution", "getaddrinfo")):
        return "the host name does not resolve"
    if "certificate" in text or "ssl" in text or "tls" in text:
        return "the TLS handshake failed (certificate not trusted?)"
    if "unreachable" in text or "no route" in text:
        return "no network route to the host"
    return "the connection failed"


def failure_text(
    exc: BaseException, url: str, timeout: float, scrubber: Scrubber, *, started: Iterable[Any] = ()
) -> str:
    """What a chat user reads when a run fails, in plain words, keys masked.

    ``started``: the segments already recorded; when there are some, the text says the answer
    above is incomplete (it stays, the error goes below it).
    """
    host = _host(url)
    incomplete = " The answer above is incomplete." if any(True for _ in started) else ""
    if isinstance(exc, PipeConfigError):
        return scrubber.error(str(exc))
    if isinstance(exc, AgentHTTPError):
        try:
            reason = http.HTTPStatus(exc.status).phrase
        except ValueError:
            reason = "error"
        detail = scrubber.error(_short(scrubber.redact(exc.detail)))
        return f"The agent at {host} answered HTTP {exc.status} {reason}" + (f": {detail}" if detail else ".")
    kinds = _kinds(exc)
    if kinds & _CONNECT_FAILURES:
        return f"The agent cannot be reached at {host} ({_connect_reason(exc)})."
    if isinstance(exc, TimeoutError):
        return f"The agent did not finish within {timeout:g} seconds, so the run was stopped.{incomplete}"
    if isinstance(exc, EventTooLarge):
        return (
            f"The agent sent an event of more than {exc.limit / MB:g} MB (the pipe's MAX_EVENT_MB), "
            f"so the run was stopped.{incomplete}"
        )
    if isinstance(exc, StreamEndedEarly):
        return f"The agent's stream ended before the run finished.{incomplete}"
    if kinds & _TRANSPORT_FAILURES or isinstance(exc, OSError):
        when = "while it was answering" if incomplete else "before it answered"
        return f"The connection to the agent at {host} broke {when} ({type(exc).__name__}).{incomplete}"
    return f"The agent pipe failed ({type(exc).__name__}); the Open WebUI log has the details.{incomplete}"


def _short(detail: str) -> str:
    try:
        parsed = json.loads(detail)
        if isinstance(parsed, dict) and isinstance(parsed.get("detail"), str):
            detail = parsed["detail"]
    except ValueError:
        pass
    detail = " ".join(detail.split())
    return detail if len(detail) <= 200 else detail[:199] + "…"
