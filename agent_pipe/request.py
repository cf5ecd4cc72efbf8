"""Who asks, in which chat, under which trace: identity, ids, trace context, user context."""

import base64
import functools
import hmac
import ipaddress
import json
import os
import re
import sys
import time
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

from agent_pipe.constants import (
    AGUI_PROTOCOL_VERSION,
    GROUPS_CACHE_USERS,
    GROUPS_TTL_SECONDS,
    IDENTITY_HEADER,
    IDENTITY_ISSUER,
    IDENTITY_KEY_ENV,
    IDENTITY_KID_ENV,
    IdentityRequired,
    PipeConfigError,
)
from agent_pipe.failures import _host
from agent_pipe.files import with_openai_files
from agent_pipe.helpers import _str, log, random_hex
from agent_pipe.history import to_agui_messages, to_openai_messages
from agent_pipe.secrets import Signer, TokenMask
from agent_pipe.valves import AgentSpec
from provisioner.contract import METADATA_KEY, RESERVED_HEADER_PREFIX, RESERVED_HEADERS

# === the request ==================================================================================


# --- who asks, in which chat, under which trace: identity, ids, trace context, user context ----
# Open WebUI's own connections say who the user is in headers (``open_webui/utils/headers.py``):
# with ENABLE_FORWARD_USER_INFO_HEADERS one HS256 JWT when FORWARD_USER_INFO_HEADER_JWT_SECRET is
# set, else plain X-OpenWebUI-User-* headers. The pipe sends the same, read from the server's
# environment itself (so it works on every release; read once, as Open WebUI reads it), and adds claims of its own (groups, model,
# chat and message ids; not ``aud``, which would make PyJWT without an audience reject the token).
# With a signing key (the IDENTITY_KEYS valve or AIHUB_IDENTITY_PRIVATE_KEY) it also sends an
# EdDSA token for this agent alone (``aud``): with a shared HS256 secret any agent could mint one
# for another. The tokens are made by hand (a JWT is three base64url parts): no import per chat.


@dataclass(frozen=True)
class ForwardSettings:
    """Open WebUI's user-info forwarding settings (env.py names and defaults)."""

    enabled: bool
    secret: str
    jwt_header: str
    lifetime: int
    user_headers: tuple[str, str, str, str]  # name, id, email, role
    chat_header: str
    message_header: str

    def header_names(self) -> set[str]:
        """Every header these settings name, lowercased: the ones an OAuth token may not take."""
        return {h.lower() for h in (*self.user_headers, self.jwt_header, self.chat_header, self.message_header)}


_IDENTITY_ENVIRONMENT = (
    "ENABLE_FORWARD_USER_INFO_HEADERS",
    "FORWARD_USER_INFO_HEADER_JWT_SECRET",
    "FORWARD_USER_INFO_HEADER_JWT",
    "FORWARD_USER_INFO_HEADER_JWT_EXPIRES_SECONDS",
    "FORWARD_USER_INFO_HEADER_USER_NAME",
    "FORWARD_USER_INFO_HEADER_USER_ID",
    "FORWARD_USER_INFO_HEADER_USER_EMAIL",
    "FORWARD_USER_INFO_HEADER_USER_ROLE",
    "FORWARD_SESSION_INFO_HEADER_CHAT_ID",
    "FORWARD_SESSION_INFO_HEADER_MESSAGE_ID",
    "AIHUB_IDENTITY_PRIVATE_KEY",
    "AIHUB_IDENTITY_KEY_ID",
)


@functools.lru_cache(maxsize=1)
def server_environment() -> Mapping[str, str]:
    """The server's identity settings, read once per process: Open WebUI reads its own (env.py)
    once at start, so a change needs a restart there as well. Read per chat, a dozen unset
    variables would cost the first token ~0.08 ms (an unset read raises inside ``os.environ``)."""
    return types.MappingProxyType({name: os.environ[name] for name in _IDENTITY_ENVIRONMENT if name in os.environ})


@functools.lru_cache(maxsize=1)
def server_forward_settings() -> ForwardSettings:
    return forward_settings(server_environment())


def forward_settings(environ: Mapping[str, str]) -> ForwardSettings:
    """Open WebUI's forwarding settings from an environment (its names, its defaults)."""
    get = environ.get
    try:
        lifetime = int(get("FORWARD_USER_INFO_HEADER_JWT_EXPIRES_SECONDS") or 300)
    except ValueError:
        lifetime = 300
    prefix = "FORWARD_USER_INFO_HEADER_USER_"
    return ForwardSettings(
        enabled=(get("ENABLE_FORWARD_USER_INFO_HEADERS") or "false").lower() == "true",
        secret=(get("FORWARD_USER_INFO_HEADER_JWT_SECRET") or "").strip(),
        jwt_header=get("FORWARD_USER_INFO_HEADER_JWT") or "X-OpenWebUI-User-Jwt",
        lifetime=lifetime,
        user_headers=(
            get(prefix + "NAME") or "X-OpenWebUI-User-Name",
            get(prefix + "ID") or "X-OpenWebUI-User-Id",
            get(prefix + "EMAIL") or "X-OpenWebUI-User-Email",
            get(prefix + "ROLE") or "X-OpenWebUI-User-Role",
        ),
        chat_header=get("FORWARD_SESSION_INFO_HEADER_CHAT_ID") or "X-OpenWebUI-Chat-Id",
        message_header=get("FORWARD_SESSION_INFO_HEADER_MESSAGE_ID") or "X-OpenWebUI-Message-Id",
    )


@dataclass(frozen=True)
class SigningKey:
    kid: str
    key: Any  # cryptography's Ed25519PrivateKey
    pem: str  # masked by the scrubber


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# json.dumps with any argument of its own builds a new JSONEncoder per call (~4 µs a token here)
_compact_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


@functools.lru_cache(maxsize=16)
def _jwt_header(alg: str, kid: str = "") -> str:
    """A JWT's first part, encoded once per algorithm and key id: it is the same for every chat."""
    header = {"alg": alg, "typ": "JWT", **({"kid": kid} if kid else {})}
    return _b64url(_compact_json(header).encode())


def _jwt_input(header: str, claims: Mapping[str, Any]) -> bytes:
    return f"{header}.{_b64url(_compact_json(claims).encode())}".encode()


def mint_hs256(claims: Mapping[str, Any], secret: str) -> str:
    """Open WebUI's forwarded-user JWT (``_mint_forward_user_jwt``): HS256, ``typ: JWT``."""
    signing_input = _jwt_input(_jwt_header("HS256"), claims)
    signature = hmac.digest(secret.encode(), signing_input, "sha256")
    return f"{signing_input.decode()}.{_b64url(signature)}"


def mint_eddsa(claims: Mapping[str, Any], key: SigningKey) -> str:
    signing_input = _jwt_input(_jwt_header("EdDSA", key.kid), claims)
    return f"{signing_input.decode()}.{_b64url(key.key.sign(signing_input))}"


@functools.lru_cache(maxsize=8)
def _load_signing_key(pem: str, kid: str) -> SigningKey | None:
    """An Ed25519 private key (PKCS8 PEM), loaded once; None when it does not load."""
    try:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        key = load_pem_private_key(pem.encode(), password=None)
    except Exception:
        log.warning("aihub_agent_pipe: the identity signing key does not load (an Ed25519 PKCS8 PEM is expected)")
        return None
    if not isinstance(key, Ed25519PrivateKey) or not kid:
        log.warning("aihub_agent_pipe: the identity signing key is not Ed25519 or has no key id")
        return None
    return SigningKey(kid=kid, key=key, pem=pem)


@functools.lru_cache(maxsize=8)
def _valve_signing_key(text: str) -> tuple[str, str]:
    """(PEM, kid) of the IDENTITY_KEYS valve's ``signing`` entry; empty when there is none."""
    try:
        signing = (json.loads(text) if text else {}).get("signing") or {}
        return _str(signing.get("private_key_pem")), _str(signing.get("kid"))
    except (ValueError, AttributeError):
        log.warning("aihub_agent_pipe: the IDENTITY_KEYS valve is not valid JSON")
        return "", ""


@functools.lru_cache(maxsize=8)
def _valve_staged_pem(text: str) -> str:
    """The PEM of the IDENTITY_KEYS valve's ``staged`` entry (published, never signs); empty when none."""
    try:
        staged = (json.loads(text) if text else {}).get("staged") or {}
        return _str(staged.get("private_key_pem"))
    except (ValueError, AttributeError):
        return ""


def identity_secrets(valve: str, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """What signs identities (the HS256 secret, the private keys, the staged one too): masked
    like the agents' keys."""
    environ = server_environment() if environ is None else environ
    pems = (_valve_signing_key(valve)[0], _valve_staged_pem(valve)) if valve else ()
    values = (environ.get("FORWARD_USER_INFO_HEADER_JWT_SECRET") or "", environ.get(IDENTITY_KEY_ENV) or "", *pems)
    return tuple(v.strip() for v in values if v.strip())


def signing_key(valve: str, environ: Mapping[str, str] | None = None) -> SigningKey | None:
    """The server's AIHUB_IDENTITY_PRIVATE_KEY (with AIHUB_IDENTITY_KEY_ID) wins over the valve."""
    environ = server_environment() if environ is None else environ
    pem = environ.get(IDENTITY_KEY_ENV) or ""
    if pem.strip():
        return _load_signing_key(pem, environ.get(IDENTITY_KID_ENV) or "server")
    pem, kid = _valve_signing_key(valve)
    return _load_signing_key(pem, kid) if pem else None


def identity_claims(
    user: Mapping[str, Any],
    groups: Iterable[Mapping[str, str]],
    *,
    model: str,
    chat_id: str,
    message_id: str,
    now: int,
    lifetime: int,
) -> dict[str, Any]:
    """Open WebUI's claims (``sub, email, name, role, iss, iat, exp``) plus the pipe's own."""
    return {
        "sub": _str(user.get("id")),
        "email": _str(user.get("email")),
        "name": _str(user.get("name")),
        "role": _str(user.get("role")),
        "iss": "open-webui",
        "iat": now,
        "exp": now + lifetime,
        "groups": [{"id": _str(g.get("id")), "name": _str(g.get("name"))} for g in groups],
        "model": model,
        "chat_id": chat_id,
        "message_id": message_id,
    }


class GroupsCache:
    """Each user's groups as last read, for GROUPS_TTL_SECONDS; a failed read is not kept."""

    def __init__(self, ttl: float = GROUPS_TTL_SECONDS, users: int = GROUPS_CACHE_USERS) -> None:
        self.ttl, self.users = ttl, users
        self._read: dict[str, tuple[float, list[dict[str, str]]]] = {}

    async def groups(self, store: Any, user_id: str) -> list[dict[str, str]]:
        now = time.monotonic()
        kept = self._read.get(user_id)
        if kept is not None and now < kept[0]:
            return kept[1]
        found = await store.groups(user_id)
        if len(self._read) >= self.users:
            self._read.clear()
        self._read[user_id] = (now + self.ttl, found)
        return found


def needs_groups(agent: "AgentSpec", settings: ForwardSettings, key: SigningKey | None) -> bool:
    """Whether a token will be minted (only tokens carry the groups: a store read is skipped otherwise)."""
    return agent.identity != "none" and (key is not None or (settings.enabled and bool(settings.secret)))


def identity_headers(
    agent: "AgentSpec", claims: Mapping[str, Any], settings: ForwardSettings, key: SigningKey | None
) -> dict[str, str]:
    """The identity headers for one request; IdentityRequired when ``signed`` cannot be kept."""
    if agent.identity == "none":
        return {}
    headers: dict[str, str] = {}
    if settings.enabled and settings.secret:
        headers[settings.jwt_header] = mint_hs256(claims, settings.secret)
    elif settings.enabled and agent.identity != "signed":  # Open WebUI's plain headers: never under "signed"
        name, user_id, email, role = settings.user_headers
        headers[name] = quote(_str(claims["name"]).strip(), safe=" ")
        headers[user_id] = _str(claims["sub"])
        headers[email] = quote(_str(claims["email"]).strip(), safe="@+ ")
        headers[role] = _str(claims["role"])
    if key is not None:
        own = {**claims, "iss": IDENTITY_ISSUER, "aud": claims["model"]}
        headers[IDENTITY_HEADER] = mint_eddsa(own, key)
    if agent.identity == "signed" and not any(h in headers for h in (settings.jwt_header, IDENTITY_HEADER)):
        raise IdentityRequired(
            "This agent accepts only a signed identity, and no key is set: an administrator has to set "
            "FORWARD_USER_INFO_HEADER_JWT_SECRET (with ENABLE_FORWARD_USER_INFO_HEADERS=true) or the pipe's "
            "identity key (provision sync writes it). Nothing was sent to the agent."
        )
    return headers


def session_headers(settings: ForwardSettings, chat_id: str, message_id: str) -> dict[str, str]:
    """Open WebUI's chat and message id headers (its names), for the OpenAI transport."""
    headers = {}
    if chat_id:
        headers[settings.chat_header] = chat_id
    if message_id:
        headers[settings.message_header] = message_id
    return headers


def traceparent() -> str:
    """A W3C traceparent: the child of Open WebUI's current OpenTelemetry span when its tracing is
    on (ENABLE_OTEL_TRACES imports opentelemetry; the pipe never imports it), else a new trace."""
    otel = sys.modules.get("opentelemetry.trace")
    if otel is not None:
        try:
            context = otel.get_current_span().get_span_context()
            if context.is_valid:
                return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"
        except Exception:
            log.debug("aihub_agent_pipe: reading the current span failed", exc_info=True)
    ids = random_hex(24)  # a trace id and a span id from one read
    return f"00-{ids[:32]}-{ids[32:]}-01"


def trace_id(parent: str) -> str:
    return parent.split("-")[1] if parent.count("-") == 3 else ""


_CONTEXT_VARIABLES = (
    ("{{USER_LANGUAGE}}", "user_language", "The user's language"),
    ("{{CURRENT_DATETIME}}", "current_datetime", "The current date and time"),
    ("{{CURRENT_TIMEZONE}}", "current_timezone", "The user's timezone"),
)


def user_context(metadata: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(key, description, value) of the prompt variables the browser set (``metadata["variables"]``);
    an API client sets none, so the current time is then the server's, in UTC."""
    variables = metadata.get("variables")
    variables = variables if isinstance(variables, Mapping) else {}
    out = []
    for name, key, description in _CONTEXT_VARIABLES:
        value = variables.get(name)
        if not (isinstance(value, str) and value.strip()) and key == "current_datetime":
            value = utc_time_text(int(time.time()))
        if isinstance(value, str) and value.strip():
            out.append((key, description, value.strip()[:200]))
    return out


@functools.lru_cache(maxsize=1)
def utc_time_text(second: int) -> str:
    """The server's time for a chat whose client set none; formatted once per second (strftime
    cost an API client's first token ~10 µs)."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(second))


# An HTTP field name (RFC 9110 token), as provision's HeaderName checks it.
_HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}")


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (provisioner/urls.py's rule); a name that only starts
    like one (``127.attacker.example``) is not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def oauth_header(agent: "AgentSpec", token: Any) -> dict[str, str]:
    """The user's OAuth access token in the backend's own header, only over https or loopback,
    and never in a header the pipe or HTTP sets itself (the rules provision validates with: the
    AGENTS valve can be edited by hand)."""
    if not agent.oauth_token_header:
        return {}
    name = agent.oauth_token_header
    lowered = name.lower()
    if not _HEADER_NAME.fullmatch(name) or lowered in RESERVED_HEADERS or lowered.startswith(RESERVED_HEADER_PREFIX):
        raise PipeConfigError(
            "The agent asks for the user's OAuth token in a header the pipe or HTTP sets itself (or in no valid "
            "header name); an administrator has to give it a header of its own. Nothing was sent to the agent."
        )
    access = token.get("access_token") if isinstance(token, Mapping) else None
    if not isinstance(access, str) or not access:
        return {}
    parts = urlsplit(agent.url)
    host = parts.hostname or ""
    if parts.scheme != "https" and not is_loopback(host):
        raise PipeConfigError(
            f"The agent asks for the user's OAuth token, and its address {_host(agent.url)} is not https: "
            "the pipe sends the token only over https (or to loopback). Nothing was sent to the agent."
        )
    return {agent.oauth_token_header: access}


@dataclass
class Turn:
    """What one request to the agent carries besides the chat: ids, trace, context, identity."""

    chat_id: str
    message_id: str
    user_message_id: str
    traceparent: str
    trace_id: str
    context: list[tuple[str, str, str]]
    user_id: str = ""  # the user's id, unless the backend asked for no identity
    headers: dict[str, str] = field(default_factory=dict)
    forwarded: dict[str, str] = field(default_factory=dict)  # AG-UI forwardedProps keys
    mask: TokenMask = field(default_factory=TokenMask)
    failure: Exception | None = None


def _oauth_secrets(token: Any) -> list[str]:
    """Every token in Open WebUI's OAuth token dict (access, refresh, id), masked even when unsent."""
    if not isinstance(token, Mapping):
        return []
    return [v for k, v in token.items() if isinstance(v, str) and k.endswith("token")]


def requested_features(metadata: Mapping[str, Any], supported: Iterable[str]) -> list[str]:
    """Features the filters put into the metadata key, kept only when the agent supports them."""
    requested = metadata.get(METADATA_KEY)
    if not isinstance(requested, list):
        return []
    allowed = set(supported)
    return list(dict.fromkeys(f for f in requested if isinstance(f, str) and f in allowed))


def openai_request(
    agent: "AgentSpec", history: Iterable[Mapping[str, Any]], signer: Signer, turn: Turn, features: list[str]
) -> dict[str, Any]:
    """A turn as an OpenAI chat completions request: the history with its files, streamed, with
    the run's usage in the final chunk; features and user context as metadata."""
    payload: dict[str, Any] = {
        "model": agent.model or agent.id,
        "messages": with_openai_files(to_openai_messages(history, signer)),
        "stream": True,
        "stream_options": {"include_usage": True},  # the final chunk then carries the usage
        "metadata": {"features": features, **{key: value for key, _, value in turn.context}},
    }
    if turn.user_id:
        payload["user"] = turn.user_id
    return payload


def agui_request(
    history: Iterable[Mapping[str, Any]],
    signer: Signer,
    turn: Turn,
    features: list[str],
    known: list[list[Mapping[str, Any]]] | None = None,
) -> dict[str, Any]:
    """A turn as an AG-UI RunAgentInput: the chat is the thread and Open WebUI's message the run
    (fresh ids for an API client's chat), user context as context, features as forwardedProps;
    earlier answers under the agent's own ids where ``known`` (the stored chat) has them."""
    return {
        "protocolVersion": AGUI_PROTOCOL_VERSION,
        "threadId": turn.chat_id or f"aihub-{random_hex()}",
        "runId": turn.message_id or f"aihub-run-{random_hex()}",
        "messages": to_agui_messages(history, signer, known),
        "tools": [],
        "context": [{"description": description, "value": value} for _, description, value in turn.context],
        "state": {},
        "forwardedProps": {"features": features, **turn.forwarded},
    }
