"""The framework matrix's shared parts: the behaviours, driving the pipe, recording each outcome.

tests/functions/test_framework_matrix.py asks every framework of tests/support/frameworks/ for
every behaviour of issue 32 through the real pipe (owui_functions/aihub_agent_pipe.py, loaded as
Open WebUI loads it) against the framework's own server. Each outcome goes to
``<AIHUB_FRAMEWORK_RESULTS>/<framework>.json`` (default ``.frameworks/``): ``yes``,
``qualified: why`` or ``no: why`` (``no: the framework's own: why`` where the framework's server
does otherwise and the test asserts what it does); scripts/framework-table turns them into docs/agent-frameworks.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.frameworks import harness
from tests.support.pipe_support import FakeStore, PipeRun, drive, make_pipe, pipe_module

P = pipe_module
RESULTS_DIR = Path(os.environ.get("AIHUB_FRAMEWORK_RESULTS") or harness.REPO / ".frameworks")

# (id, what it checks, the scenario of apps/_common.py it needs). The order is the table's.
BEHAVIOURS: tuple[tuple[str, str, str], ...] = (
    (
        "stream+tools",
        "streamed text, a server-side tool call with streamed arguments and its result, more text: "
        "each once, in stream order",
        "tool",
    ),
    ("later turns", "a second and a third turn: the model sees each earlier turn once", "tool"),
    ("files", "the user's image and document reach the model as the framework's own content", "files"),
    ("approval: approved", "a tool approval, approved: the same run resumes and the tool runs", "approve"),
    ("approval: declined", "declined: the tool never runs, the run goes on", "approve"),
    (
        "approval: no answer",
        "nobody answers: the tool never runs, the agent is told (a cancelled resume, never an approval)",
        "approve",
    ),
    (
        "question: answered",
        "the framework's question: the user's answer reaches the agent, the same run resumes",
        "ask",
    ),
    ("question: no answer", "nobody answers the question: the call is closed, nothing spins", "ask"),
    (
        "client tool: answered",
        "a tool left to the client: a dialog from its name and arguments, the answer goes back as its result",
        "client",
    ),
    ("client tool: no answer", "nobody answers: the call is closed as not run", "client"),
    ("tool error", "a tool raises: it shows as the agent's error, no spinning block", "tool_error"),
    ("model error", "the model fails mid-answer: the agent's error after the text, no spinning block", "model_error"),
    ("usage", "token usage shows wherever the framework reports it", "stream"),
    (
        "Open WebUI chat",
        "a tool turn through a real Open WebUI 0.12.4 chat (tests/e2e/test_framework_chat_e2e.py), "
        "stored in stream order with its arguments and result",
        "tool",
    ),
)
BEHAVIOUR_IDS = tuple(b[0] for b in BEHAVIOURS)
QUESTION_TIMEOUT = 1.0
ADDRESS = "12 Rue de Rivoli, Paris"


def scenario_of(behaviour: str) -> str:
    return next(b[2] for b in BEHAVIOURS if b[0] == behaviour)


def cases(names: list[str] | None = None) -> list[tuple[str, str]]:
    """Every (framework, behaviour) whose scenario the framework's server offers."""
    known = harness.frameworks()
    return [
        (name, b) for name in (names or list(known)) for b in BEHAVIOUR_IDS if scenario_of(b) in known[name].scenarios
    ]


# --- recording -------------------------------------------------------------------------------------


def record(framework: harness.Framework, behaviour: str, outcome: str) -> None:
    """Write one outcome into the framework's results file (read-modify-write under a lock)."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{framework.name}.json"
    with open(RESULTS_DIR / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        if data.get("pins") != list(framework.pins):
            data = {}  # another version's results: start over
        data.update(
            {
                "framework": framework.name,
                "package": framework.package,
                "version": framework.version,
                "pins": list(framework.pins),
                "recorded_at": time.time(),
            }
        )
        data.setdefault("behaviours", {})[behaviour] = outcome
        path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


@dataclass
class Note:
    """What a passing test says beyond "yes": qualified (works, with a difference) or no (the
    framework offers no such thing, and the pipe correctly shows none)."""

    qualified: list[str] = field(default_factory=list)
    not_offered: str = ""
    frameworks_own: str = ""

    def qualify(self, why: str) -> None:
        self.qualified.append(why)

    def no(self, why: str) -> None:
        self.not_offered = why

    def framework(self, why: str) -> None:
        """The framework's own server does otherwise (the test asserts what it does instead): no
        pipe could do it, so it is no gap of the pipe's, and the table changes the day the framework does."""
        self.frameworks_own = why


@contextlib.contextmanager
def outcome(server: harness.FrameworkServer, behaviour: str) -> Iterator[Note]:
    """Record the outcome of the block: a failed assertion is ``no: <its first line>``."""
    note = Note()
    try:
        yield note
    except BaseException as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        record(server.framework, behaviour, f"no: {message[:300]}")
        raise
    if note.not_offered:
        record(server.framework, behaviour, f"no: not offered: {note.not_offered}")
    elif note.frameworks_own:
        record(server.framework, behaviour, f"no: the framework's own: {note.frameworks_own}")
    elif note.qualified:
        record(server.framework, behaviour, "qualified: " + "; ".join(note.qualified))
    else:
        record(server.framework, behaviour, "yes")


# --- driving the pipe --------------------------------------------------------------------------------


class Dialog:
    """Open WebUI's __event_call__ as a browser answers it; keeps each question."""

    def __init__(self, answer: Any = True, delay: float = 0) -> None:
        self.answer, self.delay = answer, delay
        self.questions: list[dict[str, Any]] = []

    async def __call__(self, question: dict[str, Any]) -> Any:
        self.questions.append(question)
        await asyncio.sleep(self.delay)
        return self.answer


class Wire:
    """Every AG-UI event the pipe read, in order (the pipe's own reader, teed), and the bytes it
    read them from (what the pipe drops unparsed, RAW events, is only there)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.raw = bytearray()

    def tap(self, monkeypatch: Any) -> Wire:
        feed, end = P.AgentStream.feed, P.AgentStream.end
        seen, raw = self.events, self.raw

        def teed(method: Any) -> Any:
            def read(self: Any, *args: Any) -> Iterator[dict[str, Any]]:
                raw.extend(args[0] if args else b"")
                for event in method(self, *args):
                    seen.append(event)
                    yield event

            return read

        monkeypatch.setattr(P.AgentStream, "feed", teed(feed))
        monkeypatch.setattr(P.AgentStream, "end", teed(end))
        return self

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind]


@dataclass
class Chat:
    """One chat with a framework's agent through the pipe: its turns share the chat id (the thread)."""

    server: harness.FrameworkServer
    chat_id: str = field(default_factory=lambda: f"chat-{uuid.uuid4().hex[:10]}")
    history: list[dict[str, Any]] = field(default_factory=list)
    # what Open WebUI stores with each answer and the pipe reads back: the agent's message ids it
    # put in the answer's last status (statusHistory)
    answers: list[list[dict[str, Any]]] = field(default_factory=list)

    @property
    def model(self) -> str:
        return f"fw.{self.server.name}"

    def say(
        self,
        text: str,
        *,
        event_call: Any = None,
        store: Any = None,
        metadata: dict[str, Any] | None = None,
        question_timeout: float = QUESTION_TIMEOUT,
        stream_interval_ms: float | None = None,
    ) -> PipeRun:
        pipe = make_pipe(
            [
                {
                    "id": self.model,
                    "name": self.server.name,
                    "transport": "agui",
                    "url": self.server.agent_url,
                    "features": ["user_files"],
                }
            ],
            timeout=60,
            stream_interval_ms=stream_interval_ms,
        )
        pipe.valves.QUESTION_TIMEOUT_SECONDS = question_timeout
        pipe.store = store if store is not None else FakeStore()
        pipe.store.answers = list(self.answers)
        messages = [*self.history, {"role": "user", "content": text}]
        run = asyncio.run(
            drive(pipe, self.model, messages, chat_id=self.chat_id, event_call=event_call, metadata=metadata)
        )
        self.history = [*messages, {"role": "assistant", "content": run.content}]
        statuses = [e["data"] for e in run.events if e.get("type") == "status"]
        self.answers.append(
            next((s[P.AGENT_MESSAGES_KEY] for s in reversed(statuses) if P.AGENT_MESSAGES_KEY in s), [])
        )
        return run


def pause_kind(wire: Wire) -> str:
    """How the server asked for the user (for the reason a test gives when nobody was asked)."""
    if any(e.get("name") == "on_interrupt" for e in wire.of("CUSTOM")):
        return "a CUSTOM on_interrupt event"
    outcomes = [e.get("outcome") or {} for e in wire.of("RUN_FINISHED")]
    if any(o.get("type") == "interrupt" for o in outcomes):
        return "a RUN_FINISHED interrupt outcome"
    if any(o.get("pendingToolCallIds") for o in outcomes):
        return "RUN_FINISHED.outcome.pendingToolCallIds"
    results = {e.get("toolCallId") for e in wire.of("TOOL_CALL_RESULT")}
    if any(e.get("toolCallId") not in results for e in wire.of("TOOL_CALL_START")):
        return "a tool call left without a result and a run that ends with no outcome"
    return "no pause the test recognises"


def outline(content: str) -> list[str]:
    """The answer's segments: A"text", TC[names], tool(name) per result, ERR."""
    out: list[str] = []
    for s in P.parse_content(content):
        if isinstance(s, P.Text):
            out.append(f'A"{s.text.strip()}"')
        elif isinstance(s, P.ToolStep):
            out.append("TC[" + ",".join(c.name for c in s.calls) + "]")
            out.extend(f"tool({c.name})" for c in s.calls if c.result is not None)
        elif isinstance(s, P.Reasoning):
            out.append(f'rs"{s.text}"')
        else:
            out.append("ERR")
    return out


def calls(content: str) -> list[Any]:
    return [c for s in P.parse_content(content) if isinstance(s, P.ToolStep) for c in s.calls]


def texts(content: str) -> str:
    return "".join(s.text for s in P.parse_content(content) if isinstance(s, P.Text))


def spinning(content: str) -> bool:
    """A tool block left "Executing…" (not done)."""
    return 'done="false"' in content or "Executing" in content
