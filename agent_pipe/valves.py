"""The AGENTS and API_KEYS valves, parsed once per text, and the scrubber they make."""

import functools
import json
import re
import types
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from agent_pipe.helpers import log
from agent_pipe.secrets import Scrubber

# === valves =======================================================================================


class AgentSpec(BaseModel):
    """One entry of the AGENTS valve (written by ``provision sync``)."""

    model_config = ConfigDict(extra="ignore", frozen=True)  # parsed once, shared by every chat

    id: str
    name: str
    transport: Literal["agui", "openai"] = "agui"
    url: str
    model: str | None = None  # the model name for the openai transport (default: the agent id)
    api_key: str | None = None  # the key's name: in API_KEYS ("sync") or the server's environment ("server")
    key_from: Literal["sync", "server"] = "sync"
    features: tuple[str, ...] = ()
    # issue 19's keys (CONTRACT-19); absent in valves written before them
    reads: tuple[Literal["documents", "images"], ...] | None = None  # None: not declared, takes what comes
    identity: Literal["auto", "signed", "none"] = "auto"
    oauth_token_header: str | None = None


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Open WebUI's own secrets live in its environment too: a key_from "server" agent never gets them.
_OPENWEBUI_SECRETS = ("WEBUI_", "DATABASE_", "REDIS_", "WEBSOCKET_", "OAUTH_", "LDAP_", "OPENWEBUI_")


# Open WebUI builds the valves anew for every request, but their text changes rarely and chats are
# many: what is parsed or built from them is cached by that text (read-only from then on).


@functools.lru_cache(maxsize=8)
def _parse_agents(text: str) -> Mapping[str, AgentSpec]:
    """The AGENTS valve by agent id, entries that do not validate left out (never raises)."""
    try:
        raw = json.loads(text or "[]")
    except ValueError:
        log.warning("aihub_agent_pipe: the AGENTS valve is not valid JSON")
        return types.MappingProxyType({})
    agents: dict[str, AgentSpec] = {}
    for item in raw if isinstance(raw, list) else ():
        try:
            spec = AgentSpec.model_validate(item)
        except ValidationError:
            log.warning("aihub_agent_pipe: skipping an AGENTS entry that does not validate")
            continue
        agents.setdefault(spec.id, spec)
    return types.MappingProxyType(agents)


@functools.lru_cache(maxsize=8)
def _parse_keys(text: str) -> Mapping[str, str]:
    """The API_KEYS valve: key name -> secret (anything else left out)."""
    try:
        keys = json.loads(text or "{}")
    except ValueError:
        return types.MappingProxyType({})
    if not isinstance(keys, dict):
        return types.MappingProxyType({})
    return types.MappingProxyType({str(k): v for k, v in keys.items() if isinstance(v, str) and v})


@functools.lru_cache(maxsize=8)
def _server_key_names(agents_text: str) -> tuple[str, ...]:
    """The environment variables that key_from "server" agents read their keys from."""
    return tuple(
        dict.fromkeys(
            agent.api_key
            for agent in _parse_agents(agents_text).values()
            if agent.key_from == "server" and agent.api_key and _ENV_NAME.fullmatch(agent.api_key)
        )
    )


@functools.lru_cache(maxsize=8)
def _scrubber(synced: frozenset[str], signing_key: str, from_server: tuple[str, ...]) -> Scrubber:
    """Built once per set of keys (the server's keys are read on every chat, so a rotation counts)."""
    return Scrubber(s for s in (*synced, signing_key, *from_server) if s)
