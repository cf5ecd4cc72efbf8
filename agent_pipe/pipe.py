"""The Pipe class Open WebUI calls: valves, pipes() and pipe()."""

import json
import os
import time
import traceback
from collections.abc import AsyncIterator, Mapping
from typing import Any

from pydantic import BaseModel, Field

from agent_pipe.constants import (
    ASKING_DELAY_SECONDS,
    IDENTITY_HEADER,
    MAX_FILE_REFERENCES,
    MAX_IMAGES,
    MAX_TURN_IMAGES_MB,
    MB,
    AgentHTTPError,
    EventTooLarge,
    PipeConfigError,
    StreamEndedEarly,
)
from agent_pipe.failures import _CONNECT_FAILURES, _TRANSPORT_FAILURES, _host, _kinds, failure_text
from agent_pipe.file_store import OpenWebUIStore, TurnChat, _notify, read_files
from agent_pipe.files import (
    Attachment,
    FileLimits,
    InboundFiles,
    kinds_read,
    left_out_notice,
    place_files,
    screen_inline_images,
    with_files,
)
from agent_pipe.helpers import EventEmitter, _str, log
from agent_pipe.outbound import Outbound, outbound_end
from agent_pipe.probe import PROBE_KEY, PROBE_VERSION, probe_backend, probe_requested, replica_name, server_identity
from agent_pipe.questions import AgentRun, run_with_questions
from agent_pipe.recorder import Recorder
from agent_pipe.rendering import render_error
from agent_pipe.request import (
    ForwardSettings,
    GroupsCache,
    Turn,
    _oauth_secrets,
    agui_request,
    identity_claims,
    identity_headers,
    identity_secrets,
    needs_groups,
    oauth_header,
    openai_request,
    requested_features,
    server_forward_settings,
    session_headers,
    signing_key,
    trace_id,
    traceparent,
    user_context,
)
from agent_pipe.secrets import Scrubber, TokenMask, history_signer
from agent_pipe.segments import Error
from agent_pipe.transport import Batch, StatusLine, _safe_chunks, shared_client
from agent_pipe.valves import (
    _ENV_NAME,
    _OPENWEBUI_SECRETS,
    AgentSpec,
    _parse_agents,
    _parse_keys,
    _scrubber,
    _server_key_names,
)

# === the pipe: what Open WebUI calls ==============================================================


class Pipe:
    class Valves(BaseModel):
        AGENTS: str = Field(default="[]", description="JSON list of agents (written by provision sync).")
        API_KEYS: str = Field(default="{}", description="JSON object: key name -> secret, sent as a Bearer token.")
        TIMEOUT_SECONDS: float = Field(
            default=300, gt=0, allow_inf_nan=False, description="Longest an agent run may take, in seconds."
        )
        STREAM_INTERVAL_MS: float = Field(
            default=40,
            ge=0,
            le=1000,
            allow_inf_nan=False,
            description="Text that arrives within this many milliseconds of the last piece shown goes out "
            "together (0: every delta at once). The first text and the end of a run are never held.",
        )
        HISTORY_SIGNING_KEY: str = Field(
            default="",
            description="Secret that signs the tool blocks the pipe renders, so edited ones are not trusted "
            "next turn (written once by provision sync; never shown).",
        )
        QUESTION_TIMEOUT_SECONDS: float = Field(
            default=120,
            gt=0,
            allow_inf_nan=False,
            description="How long the pipe waits for the user to answer an agent's question (an approval).",
        )
        MAX_IMAGE_MB: float = Field(
            default=10,
            gt=0,
            allow_inf_nan=False,
            description="Largest image an agent may show in a chat, in MB; a larger one gets a line instead.",
        )
        MAX_IMAGES: int = Field(
            default=MAX_IMAGES,
            ge=0,
            description="Most images (stored, or attached as links) an agent may show in one answer; the rest "
            "get one line instead.",
        )
        MAX_TURN_IMAGES_MB: float = Field(
            default=MAX_TURN_IMAGES_MB,
            gt=0,
            allow_inf_nan=False,
            description="Most MB of images an agent may store in one answer; the rest get one line instead.",
        )
        MAX_EVENT_MB: float = Field(
            default=16,
            gt=0,
            allow_inf_nan=False,
            description="Largest line or event of an agent's stream, in MB; a larger one ends the run with an "
            "error (keep it above 4/3 of MAX_IMAGE_MB: an image arrives as base64 in one event).",
        )
        IDENTITY_KEYS: str = Field(
            default="",
            description="JSON: the Ed25519 key that signs the X-AIHub-Identity token (`signing`, the only one "
            "that signs), a staged key published before it signs, and retired public keys (written by provision "
            "sync; never shown). The server's AIHUB_IDENTITY_PRIVATE_KEY wins.",
        )
        MAX_FILE_MB: float = Field(
            default=20, gt=0, allow_inf_nan=False, description="Largest attached file sent to an agent, in MB."
        )
        MAX_FILE_REFERENCES: int = Field(
            default=MAX_FILE_REFERENCES,
            ge=0,
            description="Most attached files looked up for one request to an agent; the rest are named in one line.",
        )
        MAX_TURN_FILES_MB: float = Field(
            default=50,
            gt=0,
            allow_inf_nan=False,
            description="Most MB of attached files one request to an agent carries (the newest message's first).",
        )

    def __init__(self) -> None:
        self.type = "manifold"
        self.valves = self.Valves()
        self.store: Any = OpenWebUIStore()  # where attached files are read from (tests put a fake here)
        self.groups_cache = GroupsCache()

    # -- configuration --------------------------------------------------------------------------

    def agents(self) -> list[AgentSpec]:
        """The AGENTS valve, entries that do not validate left out (never raises)."""
        return list(_parse_agents(self.valves.AGENTS).values())

    def pipes(self) -> list[dict[str, str]]:
        return [{"id": agent.id, "name": agent.name} for agent in self.agents()]

    def _agent_for(self, model: Any) -> AgentSpec | None:
        """``<function id>.<blueprint>.<agent>`` -> the agent; a function id never has a dot."""
        _, _, sub_id = _str(model).partition(".")
        return _parse_agents(self.valves.AGENTS).get(sub_id)

    def _headers(self, agent: AgentSpec) -> dict[str, str]:
        headers = {"Accept": "text/event-stream", "Content-Type": "application/json"}
        if agent.api_key:
            headers["Authorization"] = f"Bearer {self._secret(agent)}"
        return headers

    def _synced_keys(self) -> Mapping[str, str]:
        return _parse_keys(self.valves.API_KEYS)

    def _secret(self, agent: AgentSpec) -> str:
        """The agent's key: from API_KEYS, or read now from the server's environment."""
        name = agent.api_key or ""
        if agent.key_from == "server":
            if not _ENV_NAME.fullmatch(name) or name.upper().startswith(_OPENWEBUI_SECRETS):
                raise PipeConfigError(
                    f"The agent's key variable {name!r} is not allowed: the pipe never sends Open WebUI's own "
                    "settings to an agent."
                )
            secret = os.environ.get(name, "")
            if not secret:
                raise PipeConfigError(
                    f"The agent's API key is read from the environment variable {name} of the Open WebUI "
                    f"server, and {name} is not set there. An administrator has to set it and restart Open WebUI."
                )
            return secret
        synced = self._synced_keys().get(name)
        if not synced:
            raise PipeConfigError(f"The API key '{name}' is not configured in the pipe's API_KEYS valve.")
        return synced

    def scrubber(self) -> Scrubber:
        """Masks every key this pipe holds: API_KEYS, the signing key, keys it reads from the environment."""
        from_server = tuple(os.environ.get(name, "") for name in _server_key_names(self.valves.AGENTS))
        from_server += identity_secrets(self.valves.IDENTITY_KEYS)
        return _scrubber(frozenset(self._synced_keys().values()), self.valves.HISTORY_SIGNING_KEY, from_server)

    async def probe(self, agent: AgentSpec) -> str:
        """The answer to an admin's probe (probe.py): one JSON object, keys masked."""
        scrubber = self.scrubber()
        answer: dict[str, Any] = {
            PROBE_KEY: PROBE_VERSION,
            "agent": agent.id,
            "replica": replica_name(),
            "identity": agent.identity,
            **server_identity(self.valves.IDENTITY_KEYS),
        }
        try:
            secret = self._secret(agent) if agent.api_key else None
        except PipeConfigError as exc:
            answer.update(
                reached=False, host=_host(agent.url), transport=agent.transport, reason=scrubber.error(str(exc))
            )
        else:
            answer.update(await probe_backend(agent, secret, scrubber))
        # Keys masked whole. Not withheld for a shared fragment, as a chat's error is: the fields are
        # the pipe's own (agent id, host, process) and a reason probe_backend scrubbed already, and an
        # agent id with 8 characters of a key in it would withhold the answer doctor must read.
        return scrubber.redact(json.dumps(answer))

    # -- files ----------------------------------------------------------------------------------

    async def inbound_files(
        self,
        history: list[Mapping[str, Any]],
        user: Mapping[str, Any],
        metadata: Mapping[str, Any],
        agent: AgentSpec,
        emitter: EventEmitter,
        chat: TurnChat,
    ) -> InboundFiles:
        """The history with the user's files inside the messages they were attached to.

        A chat without file references costs nothing here (no store read). Images Open WebUI put
        into the messages itself obey the same limits and ``reads`` (screen_inline_images). What
        is left out is told to the user in one warning, in the same words the agent gets.
        """
        limits = FileLimits(int(self.valves.MAX_FILE_MB * MB), int(self.valves.MAX_TURN_FILES_MB * MB))
        history, inline_left_out, budget = screen_inline_images(history, limits, kinds_read(agent.reads))
        chat_files = metadata.get("files")
        own = any(isinstance(m, Mapping) and m.get("files") for m in history)
        if not chat_files and not own:
            found = InboundFiles(with_files(history, {}), left_out=inline_left_out)
            if inline_left_out:
                await _notify(emitter, left_out_notice(inline_left_out))
            return found
        stored = await chat.get()  # without it, the files go on the newest message
        placed = place_files(history, chat_files or [], stored.files() if stored else None)
        parts = await read_files(
            placed,
            store=self.store,
            user=user,
            limits=limits,
            reads=agent.reads,
            budget=budget,
            max_files=self.valves.MAX_FILE_REFERENCES,
        )
        found = InboundFiles(with_files(history, parts), left_out=list(inline_left_out))
        for index in sorted(parts):
            for part in parts[index]:
                if isinstance(part, Attachment):
                    found.attachments.append(part)
                else:
                    found.left_out.append(part)
        if found.left_out:
            await _notify(emitter, left_out_notice(found.left_out))
        return found

    @staticmethod
    async def known_ids(history: list[Mapping[str, Any]], chat: TurnChat) -> list[list[Mapping[str, Any]]] | None:
        """The agent's own ids of the earlier answers, as the stored chat kept them (agent_ids.py).
        A chat with no earlier answer costs no store read; without them the ids are the pipe's own."""
        if not any(isinstance(m, Mapping) and m.get("role") == "assistant" for m in history):
            return None
        stored = await chat.get()
        return stored.answers() if stored else None

    # -- identity, ids, trace and context ---------------------------------------------------------

    async def turn(
        self, agent: AgentSpec, model: str, user: Mapping[str, Any], metadata: Mapping[str, Any], oauth_token: Any
    ) -> "Turn":
        """Who asks, in which chat and message, under which trace: what every request carries.

        Never raises: a failure (``identity: signed`` without a key, an OAuth token that would go
        over plain http) is kept and raised where it becomes the chat's error alert.
        """
        parent = traceparent()
        turn = Turn(
            chat_id=_str(metadata.get("chat_id")),
            message_id=_str(metadata.get("message_id")),
            user_message_id=_str(metadata.get("user_message_id")),
            traceparent=parent,
            trace_id=trace_id(parent),
            context=user_context(metadata),
        )
        turn.headers["traceparent"] = parent
        settings = server_forward_settings()
        if agent.transport == "openai":
            turn.headers.update(session_headers(settings, turn.chat_id, turn.message_id))
        if agent.identity != "none":
            turn.user_id = _str(user.get("id"))
        turn.forwarded = {
            key: value
            for key, value in (
                ("user_id", turn.user_id),
                ("message_id", turn.message_id),
                ("user_message_id", turn.user_message_id),
            )
            if value
        }
        try:
            identity = await self._identity(agent, model, user, turn, settings) if agent.identity != "none" else {}
            delegated = oauth_header(agent, oauth_token)
            taken = {h.lower() for h in (*turn.headers, *identity)} | settings.header_names()
            if any(h.lower() in taken for h in delegated):  # a forwarding header renamed in the server's env
                raise PipeConfigError(
                    "The agent asks for the user's OAuth token in a header the pipe already sends (Open WebUI's "
                    "forwarding settings name it); an administrator has to give it a header of its own. "
                    "Nothing was sent to the agent."
                )
        except PipeConfigError as exc:
            turn.failure = exc
            identity, delegated = {}, {}
        turn.headers.update(identity)
        turn.headers.update(delegated)
        signed = [identity.get(settings.jwt_header, ""), identity.get(IDENTITY_HEADER, "")] if identity else []
        if secrets := [*signed, *delegated.values(), *_oauth_secrets(oauth_token)]:
            turn.mask = TokenMask(secrets)
        return turn

    async def _identity(
        self, agent: AgentSpec, model: str, user: Mapping[str, Any], turn: "Turn", settings: ForwardSettings
    ) -> dict[str, str]:
        """The identity headers of an agent that asks for one; the user's groups are read only
        when a token will carry them."""
        key = signing_key(self.valves.IDENTITY_KEYS)
        groups: list[dict[str, str]] = []
        if needs_groups(agent, settings, key):
            try:
                groups = await self.groups_cache.groups(self.store, turn.user_id)
            except Exception as exc:  # the token still says who; without groups an agent denies more
                log.warning(
                    "aihub_agent_pipe: reading the user's groups failed (%s), trace %s",
                    type(exc).__name__,
                    turn.trace_id,
                )
        claims = identity_claims(
            user,
            groups,
            model=model,
            chat_id=turn.chat_id,
            message_id=turn.message_id,
            now=int(time.time()),
            lifetime=settings.lifetime,
        )
        return identity_headers(agent, claims, settings, key)

    # -- the request ----------------------------------------------------------------------------

    async def pipe(
        self,
        body: dict[str, Any],
        __user__: dict[str, Any] | None = None,
        __metadata__: dict[str, Any] | None = None,
        __event_emitter__: EventEmitter = None,
        __task__: str | None = None,
        __request__: Any = None,
        __event_call__: Any = None,
        __oauth_token__: Any = None,
    ) -> AsyncIterator[str | dict[str, Any]]:
        """Stream the agent's answer as Open WebUI content (see the comment at the top).

        Never raises: every failure ends the answer with an error alert below what had streamed.
        """
        if __task__:
            # Title/tag/follow-up tasks are Open WebUI housekeeping and must not run the agent.
            # "{}" makes Open WebUI fall back to its defaults (e.g. the user's message as title).
            yield "{}"
            return
        agent = self._agent_for(body.get("model"))
        if agent is None:
            yield render_error(Error(f"No agent is configured for the model '{_str(body.get('model'))}'."))
            return
        if probe_requested(body, __user__):  # an admin's `provision doctor`: reach the backend, nothing else
            yield await self.probe(agent)
            return
        metadata = __metadata__ or {}
        user = __user__ or {}
        features = requested_features(metadata, agent.features)
        chat = TurnChat(
            self.store,
            _str(metadata.get("chat_id")),
            _str(user.get("id")),
            _str(metadata.get("user_message_id")) or _str(metadata.get("message_id")),
        )
        inbound = await self.inbound_files(body.get("messages") or [], user, metadata, agent, __event_emitter__, chat)
        history = inbound.history
        turn = await self.turn(agent, _str(body.get("model")), user, metadata, __oauth_token__)
        signer = history_signer(self.valves.HISTORY_SIGNING_KEY, agent.id, __user__, metadata)
        scrubber = self.scrubber()
        if agent.transport == "openai":
            payload = openai_request(agent, history, signer, turn, features)
            input_ids: list[str] = []
        else:
            payload = agui_request(history, signer, turn, features, await self.known_ids(history, chat))
            input_ids = [m["id"] for m in payload["messages"]]
        recorder = Recorder(
            input_ids=input_ids,
            scrubber=scrubber,
            signer=signer,
            error_note=f" (trace {turn.trace_id})",  # also on the agent's own RUN_ERROR
            outbound=Outbound(
                scrubber,
                max_image_bytes=int(self.valves.MAX_IMAGE_MB * MB),
                max_images=self.valves.MAX_IMAGES,
                max_turn_image_bytes=int(self.valves.MAX_TURN_IMAGES_MB * MB),
            ),
        )
        status = StatusLine(__event_emitter__)
        status.later({"description": f"Asking {agent.name}…", "done": False}, ASKING_DELAY_SECONDS)
        batch = Batch(self.valves.STREAM_INTERVAL_MS / 1000)
        try:
            if turn.failure is not None:
                raise turn.failure
            headers = {**self._headers(agent), **turn.headers}
            client = await shared_client()
            run = run_with_questions(
                AgentRun(
                    client=client,
                    agent=agent,
                    headers=headers,
                    payload=payload,
                    recorder=recorder,
                    batch=batch,
                    status=status,
                    timeout=self.valves.TIMEOUT_SECONDS,
                    event_call=__event_call__,
                    question_timeout=self.valves.QUESTION_TIMEOUT_SECONDS,
                    attachments=inbound.attachments,
                    max_event=int(self.valves.MAX_EVENT_MB * MB),
                )
            )
            try:
                async for chunk in run:
                    status.shown()
                    for piece in _safe_chunks(turn.mask.stream(chunk)):
                        yield piece
            finally:
                status.shown()  # also when the chat was stopped: no "Asking…" after that
                await run.aclose()  # a cancelled chat (stop) closes the agent's request here, at once
            if not recorder.finished:
                raise StreamEndedEarly
        except Exception as exc:  # the chat must get an answer, never a broken stream
            message = failure_text(exc, agent.url, self.valves.TIMEOUT_SECONDS, scrubber, started=recorder.segments)
            message = turn.mask.error(message)
            expected = (PipeConfigError, AgentHTTPError, StreamEndedEarly, EventTooLarge, TimeoutError, OSError)
            if isinstance(exc, expected) or (_kinds(exc) & (_CONNECT_FAILURES | _TRANSPORT_FAILURES)):
                log.warning(
                    "aihub_agent_pipe: agent %s, trace %s: %s", agent.id, turn.trace_id, scrubber.error(message)
                )
            else:
                trace = turn.mask.redact(scrubber.redact("".join(traceback.format_exception(exc))))
                log.error(
                    "aihub_agent_pipe: unexpected error for agent %s, trace %s\n%s", agent.id, turn.trace_id, trace
                )
            recorder.finish(error=message)
        for chunk in _safe_chunks(turn.mask.stream(batch.take())):  # held text goes out before the error
            yield chunk
        for update in recorder.take_statuses():
            await status.send(update)
        for chunk in _safe_chunks(turn.mask.stream(recorder.drain()) + turn.mask.flush()):
            yield chunk
        where = {"request": __request__, "user": __user__, "metadata": metadata}
        async for extra in outbound_end(recorder.outbound, __event_emitter__, bool(body.get("stream")), where):
            yield extra
