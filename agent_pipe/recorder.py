"""Events in, ordered segments and stable output out (the Recorder). What each AG-UI event means
for the recording rules is its handler in agent_pipe/dispatch.py."""

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agent_pipe.agent_ids import AGENT_MESSAGES_KEY, AgentMessages
from agent_pipe.constants import MAX_STATUS_CHARS
from agent_pipe.dispatch import _HANDLERS, _SUBAGENT_CONTENT
from agent_pipe.helpers import _is_json, _str, random_hex
from agent_pipe.outbound import Outbound
from agent_pipe.rendering import render_piece, render_segments
from agent_pipe.secrets import Scrubber, Signer
from agent_pipe.segments import Error, Reasoning, Segment, Subagent, Text, ToolCall, ToolStep

# === the recorder: events in, ordered segments and stable output out ==============================


class RecorderStateError(RuntimeError):
    """The recorder's own bookkeeping disagrees with its segments: a bug in the pipe, never the
    agent's doing. The turn ends with an error alert and the log has the traceback."""


class Recorder:
    """Records one agent run as ordered segments from AG-UI events (pure: no I/O).

    ``feed`` takes AG-UI events as dicts (camelCase, as on the wire). ``drain`` returns the output
    that became stable since the last call; all drains joined equal ``render()`` once finished.
    ``statuses`` collects status updates for Open WebUI's event emitter.

    Why it holds some output back: content handed to Open WebUI can never be taken back, and a
    tool block's result arrives after the call started. So a segment streams only once it can no
    longer change. Text streams delta by delta. A tool step streams when every call in it has its
    result, or when the run ends (then a call without a result shows done="false"); until then
    everything after it, text included, is held, so text that follows a call always lands below
    the call's block. Reasoning streams when the next non-reasoning segment starts, because its
    header carries the duration. Status events ("Running get_weather…", "Thinking…") cover the
    wait. A MESSAGES_SNAPSHOT never reorders what streamed; it is used only when nothing else
    streamed.

    Segment rules (reference/agui-snapshot-order.md §3.1): whitespace alone never opens a text
    segment; a call closes the open text; calls in a row are one step (parallel calls); a result
    ends the step for new calls but fills its own call wherever it is; reasoning in a row is one
    block; text or reasoning between calls splits the step.

    What the agent sent passes the ``scrubber`` (keys masked, markup defused; text may wait a delta
    for that) and a tool step is signed by the ``signer`` when it goes out. A run that ends in an
    error closes its calls that have no result as failed, so none keeps spinning in the chat.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        new_id: Callable[[str], str] = lambda kind: f"{kind}-{random_hex()}",
        input_ids: Iterable[str] = (),
        scrubber: Scrubber | None = None,
        signer: Signer | None = None,
        error_note: str = "",
        outbound: "Outbound | None" = None,
    ) -> None:
        """``error_note`` ends every error alert (the pipe: the turn's trace id); ``outbound``
        holds what shows beside the answer, with the pipe's limits (else the valves' defaults)."""
        self.scrubber = scrubber or Scrubber()
        self.signer = signer
        self._tail = ""  # text of the open segment that waits for the next delta (see Scrubber)
        self.segments: list[Segment] = []
        self.statuses: list[dict[str, Any]] = []
        self.finished = False
        self.error: str | None = None
        self._clock = clock
        self._new_id = new_id
        self._input_ids = set(input_ids)
        self._used_ids: set[str] = set()
        self._text_ids: set[str] = set()  # message ids that carried text: never reused for a tool step
        self._roles: dict[str, str] = {}
        self._text_open = False
        self._text_message: str | None = None
        self._message_id: str | None = None  # the text message streaming now, and its deltas so far
        self._message_parts: list[str] = []
        self._replays: set[str] = set()  # messages that repeat the one before them whole: not shown
        self._subagents: dict[str, Recorder] = {}  # subagentRunId -> its recorder, while it runs
        self._subagent_blocks: dict[int, Recorder] = {}  # id() of a Subagent segment -> its recorder
        self._call_owner: dict[str, Recorder] = {}  # a subagent's call id -> its recorder
        self.subagent_run = ""  # the subagentRunId of the subagent this recorder records ("": the agent)
        self._pending_ws = ""
        self._open_step: ToolStep | None = None
        self._calls: dict[str, tuple[ToolStep, ToolCall]] = {}
        self._last_chunk_call: str | None = None
        self._reasoning: Reasoning | None = None
        self._reasoning_start = 0.0
        self._emitted = 0  # segments fully emitted
        self._emitted_ids: set[int] = set()  # id() of the segments fully emitted
        self._emitted_chars = 0  # characters of segments[_emitted] emitted so far (text only)
        self._streamed_any = False
        self.error_note = error_note
        self.outbound = outbound or Outbound(self.scrubber)  # usage, sources and steps: beside the answer
        self.paused = False  # the run paused for the user (an interrupt): see Questions
        self.agent_messages = AgentMessages()  # the agent's own ids, kept with the answer for the next turn

    # -- events ---------------------------------------------------------------------------------

    def feed(self, event: Mapping[str, Any]) -> None:
        if self.finished or not isinstance(event, Mapping):
            return
        kind = event.get("type")
        if (self._call_owner or event.get("subagentRunId", self.subagent_run) != self.subagent_run) and (
            kind in _SUBAGENT_CONTENT
        ):
            if (child := self._subagent_of(event)) is not None:  # a subagent's own work: its block
                child.feed(event)
                self.statuses.extend(child.statuses)
                child.statuses = []
                return
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is not None:
            handler(self, event)

    # -- subagents (AG-UI 1.0) ------------------------------------------------------------------------

    def _subagent_of(self, event: Mapping[str, Any]) -> "Recorder | None":
        """The recorder of the subagent an event belongs to: by its subagentRunId, or for a call's
        later events by the call; one that starts without SUBAGENT_STARTED gets a block all the same."""
        kind, run_id = event.get("type"), _str(event.get("subagentRunId"))
        if kind not in _SUBAGENT_CONTENT or run_id == self.subagent_run:
            return None if run_id else self._call_owner.get(_str(event.get("toolCallId")))
        if not run_id:
            return self._call_owner.get(_str(event.get("toolCallId")))
        child = self._subagents.get(run_id)
        if child is None:
            child = self._start_subagent(run_id, "subagent")
        if event.get("toolCallId"):
            self._call_owner[_str(event.get("toolCallId"))] = child
        return child

    def _start_subagent(self, run_id: str, name: str) -> "Recorder":
        self._close_reasoning()
        self._close_text()
        self._open_step = None
        self._streamed_any = True
        child = Recorder(
            clock=self._clock,
            new_id=self._new_id,
            input_ids=self._input_ids,
            scrubber=self.scrubber,
            outbound=self.outbound,
        )
        child.subagent_run = run_id
        self._subagents[run_id] = child
        segment = Subagent(id=self._unique(run_id, "subagent"), name=name, segments=child.segments)
        self._subagent_blocks[id(segment)] = child
        self.segments.append(segment)
        return child

    def end_subagent(self) -> None:
        """A subagent's segment of the run ended: a call it left open did not run."""
        for _, call in self._calls.values():
            if call.result is None and not call.unreported:
                call.result = "Not run: the subagent ended before this tool returned a result."
        self.finish()

    # -- the recording rules ---------------------------------------------------------------------

    def text(self, delta: str, message_id: str | None = None) -> None:
        """Text continues the open text segment; whitespace alone never opens one."""
        if not delta or (message_id and self._roles.get(message_id, "assistant") != "assistant"):
            return
        if message_id and message_id != self._message_id:
            previous, self._message_id = "".join(self._message_parts), message_id
            self._message_parts = self.agent_messages.parts(message_id)  # its text, kept for its id
            if self._text_open and previous.strip() and delta == previous:
                self._replays.add(message_id)  # a new message that repeats the last one whole (Agno's pause)
        if message_id in self._replays:
            return
        if message_id:
            self._message_parts.append(delta)
        self._streamed_any = True
        if message_id:
            self._text_ids.add(message_id)
        self._close_reasoning()
        if self._text_open:
            segment = self._open_text()
            if (
                message_id
                and self._text_message
                and message_id != self._text_message
                and not (segment.text + self._tail)[-1:].isspace()
            ):
                delta = "\n\n" + delta  # another message continues the paragraph flow
            self._add_text(segment, delta)
            self._text_message = message_id or self._text_message
            return
        if not delta.strip():
            self._pending_ws += delta
            return
        self._open_step = None
        segment = Text("")
        self.segments.append(segment)
        self._add_text(segment, self._pending_ws + delta)
        self._pending_ws = ""
        self._text_open = True
        self._text_message = message_id

    def _add_text(self, segment: Text, delta: str) -> None:
        """Append what can go out now, scrubbed; keep a tail that may be a key's or markup's start."""
        pending = self._tail + delta
        cut = self.scrubber.stable_length(pending)
        segment.text += self.scrubber.text(pending[:cut])
        self._tail = pending[cut:]

    def tool_call(self, call_id: str, name: str, parent_id: str | None = None) -> None:
        """A call joins the open step (parallel calls) or opens a new one; text is closed."""
        if not call_id:
            return
        self._streamed_any = True
        known = self._calls.get(call_id)
        if known is not None:  # a repeated start: may only complete a name not yet streamed
            if name and not known[1].name and not self._is_emitted(known[0]):
                known[1].name = name
            return
        self._close_reasoning()
        self._close_text()
        step = self._open_step
        if step is None:
            usable = parent_id and parent_id not in self._text_ids
            step = ToolStep(message_id=self._unique(parent_id if usable else None, "msg"))
            self.segments.append(step)
            self._open_step = step
        call = ToolCall(id=call_id, name=name)
        step.calls.append(call)
        self._calls[call_id] = (step, call)
        self._used_ids.add(call_id)
        self.statuses.append({"description": f"Running {name or 'a tool'}…", "done": False})

    def tool_args(self, call_id: str, delta: str) -> None:
        entry = self._calls.get(call_id)
        if entry is None or not delta or self._is_emitted(entry[0]):
            return
        call = entry[1]
        if call.arguments and delta == call.arguments and _is_json(call.arguments):
            return  # a replay of the whole argument string (agent-framework #4194)
        call.arguments += delta

    def tool_result(self, call_id: str, content: str, message_id: str | None = None) -> None:
        """A result fills its call wherever that call is, and ends the step for new calls."""
        self._streamed_any = True
        if call_id not in self._calls:
            call_id = call_id or self._new_id("call")
            self.tool_call(call_id, "unknown_tool")  # a result whose call never streamed
        step, call = self._calls[call_id]
        if call.result is not None or self._is_emitted(step):
            return
        call.result = self.outbound.approvals.pop(call_id, "") + content
        call.result_id = self._unique(message_id, "result")
        self._open_step = None

    def calls_ran(self) -> None:
        """The calls still waiting for a result ran on the agent's side and none will come (an
        OpenAI stream that goes on after its calls): they are done, so what follows streams."""
        for step, call in self._calls.values():
            if call.result is None and not self._is_emitted(step):
                call.unreported = True
        self._open_step = None

    def reasoning(self, delta: str, reasoning_id: str | None = None) -> None:
        """Reasoning in a row is one block (rc8 gives every delta its own id)."""
        if not delta:
            return
        self._streamed_any = True
        if self._reasoning is not None:
            self._reasoning.text += delta
            self._reasoning.duration = int(self._clock() - self._reasoning_start)
            return
        if not delta.strip():
            return
        self._close_text()
        self._open_step = None
        self._reasoning = Reasoning(id=self._unique(reasoning_id, "reasoning"), text=delta)
        self._reasoning_start = self._clock()
        self.segments.append(self._reasoning)
        self.statuses.append({"description": "Thinking…", "done": False})

    def cancelled(self) -> None:
        """AG-UI 1.0's outcome ``cancelled``: the run was stopped, not failed. What streamed stays,
        a call it left open is closed as not run, and the answer says so when it has nothing else."""
        for step, call in self._calls.values():
            if call.result is None and not call.unreported and not self._is_emitted(step):
                call.result = "Not run: the agent's run was cancelled."
        if not any(isinstance(s, (Text, ToolStep)) for s in self.segments):
            self.text("*The agent cancelled the run.*")
        self.finish()
        self.statuses.append({"description": "The agent cancelled the run", "done": True})

    def finish(self, error: str | None = None) -> None:
        """End the run: everything pending is final; an error goes last."""
        if self.finished:
            return
        self._close_reasoning()
        self._close_text()
        self._open_step = None
        for child in list(self._subagents.values()):  # the run ended with its subagents
            child.finish(error=error) if error else child.end_subagent()
        self._subagents = {}
        if error:
            error = self.scrubber.error(error)
            self.error = error
            for segment in self.segments:
                if isinstance(segment, ToolStep) and not self._is_emitted(segment):
                    for call in segment.calls:
                        if call.result is None and not call.unreported:
                            call.result = "Error: the run ended before this tool returned a result."
                            call.failed = True
            self.segments.append(Error(error + self.error_note))
        self.finished = True
        last: dict[str, Any] = {"description": "The agent stopped with an error" if error else "Done", "done": True}
        last["hidden"] = not error
        if self.subagent_run == "" and (entries := self.agent_messages.entries(self.scrubber.redact)):
            last[AGENT_MESSAGES_KEY] = entries  # stored with the answer: its ids go back next turn
        self.statuses.append(last)

    # -- output ---------------------------------------------------------------------------------

    def drain(self) -> str:
        """Output that can no longer change and was not returned before."""
        out: list[str] = []
        while self._emitted < len(self.segments):
            index = self._emitted
            segment = self.segments[index]
            if isinstance(segment, Text):
                out.append(segment.text[self._emitted_chars :])
                self._emitted_chars = len(segment.text)
                if index == len(self.segments) - 1 and self._text_open:
                    break
            elif not self._is_stable(segment):
                break
            else:
                self._seal(segment)
                out.append(render_piece(self.segments[index - 1] if index else None, segment))
            self._emitted_ids.add(id(segment))
            self._emitted += 1
            self._emitted_chars = 0
        return "".join(out)

    def render(self) -> str:
        if self.finished:
            for segment in self.segments[self._emitted :]:
                self._seal(segment)
        return render_segments(self.segments)

    def take_statuses(self) -> list[dict[str, Any]]:
        statuses, self.statuses = self.statuses, []
        for status in statuses:  # masked first: a cut must not leave half a key behind
            text = self.scrubber.redact(status["description"])
            status["description"] = text if len(text) <= MAX_STATUS_CHARS else text[: MAX_STATUS_CHARS - 1] + "…"
        return statuses

    # -- helpers ----------------------------------------------------------------------------------

    def _is_stable(self, segment: Segment) -> bool:
        if self.finished and not self.paused:
            return True
        if isinstance(segment, Subagent):
            child = self._subagent_blocks.get(id(segment))
            return child is None or child.finished
        if isinstance(segment, ToolStep):
            # arguments that are not JSON lost a piece on the way: the step waits for the run's
            # snapshot, which has them whole, or its end. None at all is a call without arguments
            # (ag-ui-adk sends no TOOL_CALL_ARGS for one, and sends no snapshot): it waits for
            # nothing more (ag-ui-langgraph's own lost first chunk comes from its start's rawEvent,
            # wire.start_arguments)
            return all(
                (call.result is not None or call.unreported) and (not call.arguments or _is_json(call.arguments))
                for call in segment.calls
            )
        if isinstance(segment, Reasoning):
            return segment is not self._reasoning
        return True

    def _is_emitted(self, segment: Segment) -> bool:
        return id(segment) in self._emitted_ids

    def _seal(self, segment: Segment) -> None:
        """Final values of a segment that goes out now: keys masked, tool blocks signed."""
        redact = self.scrubber.redact
        if isinstance(segment, Subagent):
            if (child := self._subagent_blocks.get(id(segment))) is not None:
                child.render()  # its segments sealed (keys masked; not signed: never the agent's history)
            segment.id, segment.name = redact(segment.id), redact(segment.name)
            return
        if isinstance(segment, ToolStep):
            segment.message_id = redact(segment.message_id)
            for call in segment.calls:
                call.id, call.name, call.arguments = redact(call.id), redact(call.name), redact(call.arguments)
                if call.result is not None:
                    call.result = redact(call.result)
                if call.result_id:
                    call.result_id = redact(call.result_id)
                if self.signer is not None:
                    self.signer.seal(call, segment.message_id)
        elif isinstance(segment, Reasoning):
            segment.id, segment.text = redact(segment.id), redact(segment.text)

    def _open_text(self) -> Text:
        """The open text segment: while text is open, the last segment is text (an explicit
        check, not an ``assert``, which ``python -O`` strips)."""
        segment = self.segments[-1] if self.segments else None
        if not isinstance(segment, Text):
            raise RecorderStateError(f"text is open but the last segment is {type(segment).__name__}")
        return segment

    def _close_text(self) -> None:
        if self._tail and self._text_open:
            segment = self._open_text()
            segment.text += self.scrubber.text(self._tail)
        self._tail = ""
        self._text_open = False
        self._text_message = None
        self._pending_ws = ""

    def _close_reasoning(self) -> None:
        self._reasoning = None

    def _unique(self, preferred: str | None, kind: str) -> str:
        taken = self._used_ids | self._input_ids
        value = preferred if preferred and preferred not in taken else self._new_id(kind)
        while value in taken:
            value = self._new_id(kind)
        self._used_ids.add(value)
        return value
