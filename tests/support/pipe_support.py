"""Shared helpers for the agent pipe tests: loading standalone files, driving pipe(), an SSE stub."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import threading
import time
import types
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from demo_agents.sse_handler import SSEHandler
from tests.support.agui_schema import NotAnAgUiEvent, NotAnAgUiRun, check_event, check_run
from tests.support.loading import load_file

ROOT = Path(__file__).resolve().parents[2]
PIPE_FILE = ROOT / "owui_functions" / "aihub_agent_pipe.py"


pipe_module = load_file(PIPE_FILE, "aihub_agent_pipe")
OWN_EVENTS = (pipe_module.CALLS_RAN, pipe_module.USAGE)  # the pipe's own events, made by its OpenAI adapter


# --- driving the pipe the way Open WebUI does ---------------------------------------------------


TRACE_NOTE = re.compile(r" \(trace [0-9a-f]{32}\)(?=\n\Z)")


@dataclass
class PipeRun:
    chunks: list[str]
    events: list[dict[str, Any]]
    times: list[float] = field(default_factory=list)  # seconds from the call to each chunk
    data: list[dict[str, Any]] = field(default_factory=list)  # the dicts yielded (usage), in order

    @property
    def content(self) -> str:
        """The answer, the trace id at the end of an error alert left out (it is new every turn;
        ``raw`` keeps it, and tests/functions/test_inbound_identity.py checks it)."""
        return TRACE_NOTE.sub("", self.raw)

    @property
    def raw(self) -> str:
        return "".join(self.chunks)

    @property
    def sources(self) -> list[dict[str, Any]]:
        return [e["data"] for e in self.events if e.get("type") == "source"]

    @property
    def statuses(self) -> list[str]:
        return [e["data"]["description"] for e in self.events if e.get("type") == "status"]


SIGNING_KEY = "test-history-signing-key-0123456789"  # what sync would have written into the valve
# Where the recorded turns happen: drive()'s chat and user, the agent the tests record for.
CHAT, AGENT, USER = "chat-1", "ops.desk", "user-1"
_turns = iter(range(1, 1_000_000))


def signer_for(agent: str) -> Any:
    """What the pipe verifies the history with when drive() asks ``agent`` (it signs no turn)."""
    return pipe_module.Signer(SIGNING_KEY, chat_id=CHAT, agent_id=agent, user_id=USER)


SIGNER = signer_for(AGENT)


def turn_signer(turn: str | None = None, **scope: str) -> Any:
    """A Signer for one turn (a fresh turn id unless given), SIGNER's scope unless overridden."""
    where = {"chat_id": CHAT, "agent_id": AGENT, "user_id": USER, **scope}
    return pipe_module.Signer(SIGNING_KEY, turn_id=turn or f"turn-{next(_turns)}", **where)


def make_pipe(
    agents: list[dict[str, Any]],
    api_keys: dict[str, str] | None = None,
    timeout: float = 30,
    signing_key: str = SIGNING_KEY,
    stream_interval_ms: float | None = None,
) -> Any:
    """The pipe with these valves; ``stream_interval_ms`` None keeps the valve's default."""
    pipe = pipe_module.Pipe()
    interval = {} if stream_interval_ms is None else {"STREAM_INTERVAL_MS": stream_interval_ms}
    pipe.valves = pipe.Valves(
        AGENTS=json.dumps(agents),
        API_KEYS=json.dumps(api_keys or {}),
        TIMEOUT_SECONDS=timeout,
        HISTORY_SIGNING_KEY=signing_key,
        **interval,
    )
    return pipe


async def drive(
    pipe: Any,
    model: str,
    messages: list[dict[str, Any]],
    *,
    features: list[str] | None = None,
    chat_id: str = CHAT,
    user_id: str = USER,
    message_id: str = "m-1",
    stream: bool = True,
    event_call: Any = None,
    metadata: dict[str, Any] | None = None,
    user: dict[str, Any] | None = None,
    **dunders: Any,
) -> PipeRun:
    """Call ``pipe()`` with Open-WebUI-shaped arguments and collect chunks and emitted events.

    ``metadata`` is merged into ``__metadata__``, ``user`` into ``__user__``; ``dunders`` are
    passed on as they are (``__oauth_token__=...``)."""
    events: list[dict[str, Any]] = []

    async def emitter(event: dict[str, Any]) -> None:
        events.append(event)

    extra_metadata = metadata
    metadata = {"chat_id": chat_id, "message_id": message_id, "session_id": "s-1", "features": {}}
    if features is not None:
        metadata[pipe_module.METADATA_KEY] = features
    metadata.update(extra_metadata or {})
    body = {"model": f"aihub_agent_pipe.{model}", "messages": messages, "stream": stream}
    chunks, times, data, start = [], [], [], time.perf_counter()
    async for chunk in pipe.pipe(
        body=body,
        __user__={"id": user_id, "role": "user", **(user or {})},
        __metadata__=metadata,
        __event_emitter__=emitter,
        **({"__event_call__": event_call} if event_call is not None else {}),
        **dunders,
    ):
        if isinstance(chunk, dict):  # Open WebUI sends a yielded dict as a chunk of its own (usage)
            data.append(chunk)
            continue
        chunks.append(chunk)
        times.append(time.perf_counter() - start)
    return PipeRun(chunks, events, times, data)


def run_pipe(pipe: Any, model: str, messages: list[dict[str, Any]], **kwargs: Any) -> PipeRun:
    return asyncio.run(drive(pipe, model, messages, **kwargs))


def langgraph_tool_start(
    call_id: str, name: str, args: str = "", *, pieces: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """ag-ui-langgraph 0.0.47's TOOL_CALL_START for a model chunk that names the call: the chunk's
    arguments only in its rawEvent (LangChain's on_chat_model_stream, as tests/data/agui_captures/langgraph
    has it); ``pieces`` for a chunk with more than the one call's."""
    if pieces is None:
        pieces = [{"name": name, "args": args, "id": call_id, "index": 0, "type": "tool_call_chunk"}]
    chunk = {"content": "", "type": "AIMessageChunk", "id": "lc_run--1", "tool_call_chunks": pieces}
    raw = {"event": "on_chat_model_stream", "data": {"chunk": chunk}, "name": "ChatModel"}
    return {"type": "TOOL_CALL_START", "rawEvent": raw, "toolCallId": call_id, "toolCallName": name}


# --- Open WebUI's records, as the pipe reads them (Pipe.store) --------------------------------------


@dataclass
class FakeStore:
    """Open WebUI's records as the pipe reads them: files by id, who may read what, the stored chat."""

    files: dict[str, tuple[Any, bytes]] = field(default_factory=dict)
    shared: set[tuple[str, str]] = field(default_factory=set)  # (file id, user id) Open WebUI's rule allows
    stored: list[list[dict[str, Any]]] | None = None
    answers: list[list[dict[str, Any]]] | None = None  # the agent's ids each earlier answer was stored with
    reads: list[str] = field(default_factory=list)
    chat_reads: int = 0  # how many times the stored chat was read

    def add(
        self, file_id: str, name: str, mime: str, data: bytes, owner: str = "user-1", size: int | None = None
    ) -> dict:
        record = pipe_module.StoredFile(
            id=file_id,
            owner=owner,
            name=name,
            mime=mime,
            size=len(data) if size is None else size,
            path=f"/store/{file_id}",
        )
        self.files[file_id] = (record, data)
        return {"type": "file", "id": file_id, "name": name, "size": record.size}

    async def stored_chat(self, chat_id: str, user_id: str, message_id: str) -> Any:
        self.chat_reads += 1
        if self.stored is None and self.answers is None:
            return None
        return types.SimpleNamespace(files=lambda: self.stored, answers=lambda: self.answers)

    async def file(self, file_id: str) -> Any:
        entry = self.files.get(file_id)
        return entry[0] if entry else None

    async def shared_with(self, file_id: str, user_id: str) -> bool:
        return (file_id, user_id) in self.shared

    async def read(self, record: Any, limit: int) -> tuple[int, bytes]:
        self.reads.append(record.id)
        data = self.files[record.id][1]
        if len(data) > limit:
            raise pipe_module.FileTooLarge(len(data))
        return len(data), base64.b64encode(data)

    async def groups(self, user_id: str) -> list[dict[str, str]]:
        return []


# --- a stdlib SSE stub: canned streams, recorded requests ----------------------------------------


@dataclass
class StubBehaviour:
    """What the next POST gets: status, SSE data items, then close (or hang, or drop)."""

    status: int = 200
    data: list[Any] = field(default_factory=list)  # dicts are JSON-encoded; strings sent as is
    error_body: str = '{"detail": "agent exploded"}'
    raw: bytes | None = None  # send these bytes instead of encoding ``data``...
    fragment: int = 0  # ...in pieces of this many bytes (0: one piece)
    hang_after: bool = False  # keep the connection open after the data, send nothing more
    drop_after: bool = False  # close the socket without finishing the chunked body
    pauses: dict[int, float] = field(default_factory=dict)  # seconds to wait before data item i


def sse_events(body: bytes) -> list[Any]:
    """The JSON data of each event of an SSE body (CRLF or LF, data over several lines); data that
    is not JSON (a test's bad JSON on purpose, "[DONE]") as its text."""
    out: list[Any] = []
    for block in re.split(r"\r?\n\r?\n", body.decode("utf-8", "replace")):
        lines = [line[5:].removeprefix(" ") for line in re.split(r"\r?\n", block) if line.startswith("data:")]
        if lines:
            try:
                out.append(json.loads("\n".join(lines)))
            except ValueError:
                out.append("\n".join(lines))
    return out


class SSEStub:
    """A loopback HTTP server that records each request and answers with a canned SSE stream."""

    def __init__(self) -> None:
        self.behaviour = StubBehaviour()
        self.requests: list[dict[str, Any]] = []
        self.not_agui: list[str] = []  # runs the pipe sent, or raw events a test sent, that AG-UI 1.0 rejects
        self._stop = threading.Event()
        stub = self

        class Handler(SSEHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                body = json.loads(self.read_body())
                stub.requests.append({"path": self.path, "headers": dict(self.headers), "json": body})
                if isinstance(body, dict) and "threadId" in body:  # an AG-UI run (an OpenAI request has none)
                    try:
                        check_run(body)  # every run the pipe asks for is one AG-UI 1.0 allows
                    except NotAnAgUiRun as exc:
                        stub.not_agui.append(str(exc))
                b = stub.behaviour
                if b.status >= 400:
                    body = b.error_body.encode()
                    self.send_response(b.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.start_stream()
                if b.raw is not None:
                    for event in sse_events(b.raw):  # raw bytes too: their events are AG-UI 1.0's
                        try:
                            check_event(event, OWN_EVENTS)
                        except NotAnAgUiEvent as exc:
                            stub.not_agui.append(str(exc))
                    size = b.fragment or len(b.raw)
                    for start in range(0, len(b.raw), size):
                        self.send_chunk(b.raw[start : start + size])
                for index, item in enumerate(b.data):
                    check_event(item, OWN_EVENTS)  # every event a test sends is one AG-UI 1.0 allows
                    if index in b.pauses:
                        time.sleep(b.pauses[index])
                    self.send_event(item)
                if b.hang_after:
                    stub._stop.wait(30)
                if b.drop_after:
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self.end_stream()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the server; fail if the pipe sent a run, or the test raw events, that AG-UI 1.0 rejects."""
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()
        if self.not_agui:
            raise AssertionError(self.not_agui[0])


# --- AG-UI events in the reference sheet's notation ----------------------------------------------
# T(x) text delta, C(id) call, R(id) result, Z(rid, x) reasoning delta; each returns a list of events.

Event = dict[str, Any]


def T(delta: str, mid: str = "t1") -> list[Event]:
    return [{"type": "TEXT_MESSAGE_CONTENT", "messageId": mid, "delta": delta}]


def OPEN(mid: str, role: str = "assistant") -> list[Event]:
    return [{"type": "TEXT_MESSAGE_START", "messageId": mid, "role": role}]


def C(
    call_id: str, name: str = "get_weather", args: str = '{"city": "Paris"}', parent: str | None = None
) -> list[Event]:
    start: Event = {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": name}
    if parent:
        start["parentMessageId"] = parent
    return [
        start,
        {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": args},
        {"type": "TOOL_CALL_END", "toolCallId": call_id},
    ]


def R(call_id: str, content: str | None = None, mid: str | None = None) -> list[Event]:
    return [
        {
            "type": "TOOL_CALL_RESULT",
            "toolCallId": call_id,
            "messageId": mid or f"res-{call_id}",
            "content": content if content is not None else f"result of {call_id}",
            "role": "tool",
        }
    ]


def Z(rid: str, delta: str) -> list[Event]:
    return [
        {"type": "REASONING_START", "messageId": rid},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": rid, "delta": delta},
        {"type": "REASONING_END", "messageId": rid},
    ]


FINISHED: list[Event] = [{"type": "RUN_FINISHED", "threadId": "chat-1", "runId": "run-1"}]


def ERROR(
    message: str = "An internal error has occurred while streaming events.", code: str = "RuntimeError"
) -> list[Event]:
    return [{"type": "RUN_ERROR", "message": message, "code": code}]


def events(*parts: list[Event]) -> list[Event]:
    return [event for part in parts for event in part]


class FakeClock:
    """A clock the test moves, so reasoning durations are exact."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Recording:
    recorder: Any
    drains: list[str]  # what drain() returned after each event, then after the end

    @property
    def streamed(self) -> str:
        return "".join(self.drains)


def record(
    stream: list[Event],
    *,
    clock: Any = None,
    ids: Any = None,
    input_ids: tuple[str, ...] = (),
    secrets: tuple[str, ...] = (),
    signer: Any = None,
    check: bool = True,
) -> Recording:
    """Feed events one by one, draining after each, as the pipe does (tool blocks signed for a
    turn of its own in SIGNER's scope, unless ``signer`` is given)."""
    counter = iter(range(1_000_000))
    recorder = pipe_module.Recorder(
        clock=clock or FakeClock(),
        new_id=ids or (lambda kind: f"gen-{kind}-{next(counter)}"),
        input_ids=input_ids,
        scrubber=pipe_module.Scrubber(secrets),
        signer=signer or turn_signer(),
    )
    drains = []
    for event in stream:
        if check:  # every event a test makes is one AG-UI 1.0 allows (a real server's capture is what it is)
            check_event(event, OWN_EVENTS)
        recorder.feed(event)
        drains.append(recorder.drain())
    if not recorder.finished:
        recorder.finish(error="The agent's stream ended before the run finished.")
    drains.append(recorder.drain())
    return Recording(recorder, drains)


def shape(segments: list[Any]) -> list[str]:
    """Segments in the sheet's notation: A"x", TC[c1,c2], tool(c1), rs(r1), ERR"x"."""
    out: list[str] = []
    for segment in segments:
        kind = type(segment).__name__
        if kind == "Text":
            out.append(f'A"{segment.text}"')
        elif kind == "ToolStep":
            out.append("TC[" + ",".join(c.id for c in segment.calls) + "]")
            out.extend(f"tool({c.id})" for c in segment.calls if c.result is not None)
        elif kind == "Reasoning":
            out.append(f"rs({segment.id})")
        else:
            out.append(f'ERR"{segment.message}"')
    return out


def agui_shape(messages: list[dict[str, Any]]) -> list[str]:
    """AG-UI messages in the sheet's notation (what the agent gets back next turn)."""
    out: list[str] = []
    for m in messages:
        if m["role"] == "tool":
            out.append(f"tool({m['toolCallId']})")
        elif m.get("toolCalls"):
            out.append("TC[" + ",".join(c["id"] for c in m["toolCalls"]) + "]")
        elif m["role"] == "assistant":
            out.append(f'A"{m["content"]}"')
        else:
            out.append(f'{m["role"]}"{m["content"]}"')
    return out
