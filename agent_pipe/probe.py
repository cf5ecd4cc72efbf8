"""The admin's probe: can this Open WebUI process reach an agent's backend? (`provision doctor`)

`provision doctor` asks through the pipe itself, because only the pipe's side of the network
counts: a chat completion to the agent's model, from an admin's API key, whose body carries
``"aihub_probe": {...}``. The pipe honours that key only when Open WebUI says the caller's role
is ``admin`` (``__user__["role"]``); for anyone else the key is ignored and the request is an
ordinary chat. A probe sends no user data: no messages, no identity, no OAuth token, no files;
only the agent's own key (to see whether the backend takes it). It needs no chat id, so Open
WebUI stores nothing and nothing shows in a chat. The answer is one JSON object as the message
text, keys masked.

- AG-UI: POST a run with no messages (``forwardedProps.aihub_probe: true``) and hang up at the
  first event; ``RUN_STARTED`` (or any AG-UI event type) says the backend speaks AG-UI, and its
  ``protocolVersion`` (AG-UI 1.0) which version.
- OpenAI: ``GET <url>/models``; a JSON ``data`` list says it is OpenAI-compatible. No model runs.
"""

import json
import os
import socket
import time
from collections.abc import Mapping
from typing import Any

import aiohttp

from agent_pipe.constants import PipeConfigError
from agent_pipe.failures import _CONNECT_FAILURES, _connect_reason, _host, _kinds, _short
from agent_pipe.request import server_forward_settings, signing_key
from agent_pipe.secrets import Scrubber
from agent_pipe.transport import _proxy_for, shared_client
from agent_pipe.valves import AgentSpec

# === the admin's probe ============================================================================

PROBE_KEY = "aihub_probe"
PROBE_VERSION = 1
PROBE_TIMEOUT_SECONDS = 10.0
# AG-UI's event types (ag_ui.core.EventType): the first event of a run is one of these.
_AGUI_EVENTS = frozenset(
    {
        "RUN_STARTED",
        "RUN_FINISHED",
        "RUN_ERROR",
        "STEP_STARTED",
        "STEP_FINISHED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TEXT_MESSAGE_CHUNK",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_CHUNK",
        "TOOL_CALL_RESULT",
        "STATE_SNAPSHOT",
        "STATE_DELTA",
        "MESSAGES_SNAPSHOT",
        "RAW",
        "CUSTOM",
        "THINKING_START",
        "THINKING_END",
    }
)


def probe_requested(body: Mapping[str, Any], user: Mapping[str, Any] | None) -> bool:
    """A probe is honoured only for an admin; anyone else's marker is ignored."""
    return isinstance(body.get(PROBE_KEY), Mapping) and (user or {}).get("role") == "admin"


def replica_name() -> str:
    """Which Open WebUI process answered: host name and process id (two replicas differ)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def server_identity(identity_valve: str) -> dict[str, bool]:
    """What this process can tell an agent about the user (its environment, not the admin API's)."""
    settings = server_forward_settings()
    try:
        key = signing_key(identity_valve) is not None
    except Exception:  # a broken key is no key
        key = False
    return {
        "forward_user_info": settings.enabled,
        "user_jwt": settings.enabled and bool(settings.secret),
        "identity_key": key,
    }


def oauth_header_taken(agent: AgentSpec) -> bool:
    """Whether the agent's OAuth token header is one this server's forwarding settings already
    name (renamed in its environment, which no blueprint sees): its chats fail before anything
    is sent (Pipe.turn refuses the same names)."""
    name = (agent.oauth_token_header or "").lower()
    settings = server_forward_settings()
    return bool(name) and name in settings.header_names()


async def probe_backend(agent: AgentSpec, secret: str | None, scrubber: Scrubber) -> dict[str, Any]:
    """Reach the agent's backend once, from here; never raises. `secret` is its key (None: none)."""
    started = time.monotonic()
    result: dict[str, Any] = {"reached": False, "host": _host(agent.url), "transport": agent.transport}
    if agent.oauth_token_header:
        result["oauth_header_taken"] = oauth_header_taken(agent)
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    try:
        client = await shared_client()
        timeout = aiohttp.ClientTimeout(total=PROBE_TIMEOUT_SECONDS, sock_connect=PROBE_TIMEOUT_SECONDS)
        if agent.transport == "openai":
            url = agent.url.rstrip("/") + "/models"
            request = client.get(
                url, headers={**headers, "Accept": "application/json"}, timeout=timeout, proxy=_proxy_for(url)
            )
        else:
            url = agent.url
            # A thread of its own each time: a server that keeps threads (LangGraph's checkpointer)
            # would otherwise give every later probe's model the earlier probes' answers.
            probe_id = f"aihub-probe-{os.urandom(6).hex()}"
            run = {
                "threadId": probe_id,
                "runId": probe_id,
                "messages": [],
                "tools": [],
                "context": [],
                "state": {},
                "forwardedProps": {PROBE_KEY: True},
            }
            request = client.post(
                url,
                json=run,
                headers={**headers, "Accept": "text/event-stream"},
                timeout=timeout,
                proxy=_proxy_for(url),
            )
        async with request as response:
            result["status"] = response.status
            result["content_type"] = response.headers.get("Content-Type", "")
            if response.status >= 400:
                detail = (await response.content.read(2048)).decode("utf-8", "replace")
                result["reason"] = _http_reason(response.status, scrubber.error(_short(scrubber.redact(detail))))
            else:
                result.update(await _protocol(agent.transport, response))
    except PipeConfigError as exc:
        result["reason"] = scrubber.error(str(exc))
    except TimeoutError:
        result["reason"] = f"no answer within {PROBE_TIMEOUT_SECONDS:g} seconds"
    except Exception as exc:
        result["reason"] = (
            _connect_reason(exc) if _kinds(exc) & _CONNECT_FAILURES else f"the request failed ({type(exc).__name__})"
        )
    result["ms"] = round((time.monotonic() - started) * 1000)
    return result


def _http_reason(status: int, detail: str) -> str:
    if status in (401, 403):
        return f"answered HTTP {status}: the backend refused the key" + (f" ({detail})" if detail else "")
    return f"answered HTTP {status}" + (f": {detail}" if detail else "")


PROBE_READ_BYTES = 64 * 1024  # what a probe reads of a 2xx answer before it hangs up


async def _protocol(transport: str, response: Any) -> dict[str, Any]:
    """What a 2xx answer says about the protocol: read at most PROBE_READ_BYTES, then hang up."""
    raw = b""
    while len(raw) < PROBE_READ_BYTES:
        if transport != "openai" and b"\n\n" in raw:
            break
        more = await response.content.read(PROBE_READ_BYTES - len(raw))
        if not more:
            break
        raw += more
    text = raw.decode("utf-8", "replace")
    # Name what came: a web app's page at a wrong URL is text/html, not a stream without events.
    media = str(response.headers.get("Content-Type", "")).split(";")[0].strip().lower() or "no content type"
    if transport == "openai":
        try:
            data = json.loads(text)
        except ValueError:
            if len(raw) >= PROBE_READ_BYTES and media == "application/json" and text.lstrip().startswith("{"):
                return {"reached": True, "protocol": "openai"}  # a model list longer than the probe reads
            return {
                "reason": f"answered, but not as an OpenAI-compatible API ({media} at /models, not a JSON model list)"
            }
        if isinstance(data, Mapping) and isinstance(data.get("data"), list):
            return {"reached": True, "protocol": "openai"}
        return {"reason": "answered, but not as an OpenAI-compatible API (JSON at /models without a model list)"}
    event = _first_event(text)
    if event is not None:
        found: dict[str, Any] = {"reached": True, "protocol": "agui", "first_event": event.get("type")}
        # AG-UI 1.0 names its version in RUN_STARTED.protocolVersion (0.x servers say nothing).
        version = event.get("protocolVersion")
        if isinstance(version, str) and version.strip():
            found["agui_version"] = version.strip()[:40]
        return found
    if media != "text/event-stream":
        return {"reason": f"answered, but not as an AG-UI endpoint ({media}, not an AG-UI event stream)"}
    return {"reason": "answered, but not as an AG-UI endpoint (no AG-UI event in a text/event-stream)"}


def _first_event(text: str) -> dict[str, Any] | None:
    for line in text.splitlines():
        if line.startswith("data:"):
            try:
                event = json.loads(line[5:].strip())
            except ValueError:
                return None
            return event if isinstance(event, dict) and event.get("type") in _AGUI_EVENTS else None
    return None
