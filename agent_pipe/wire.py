"""Bytes in, AG-UI events out: SSE, the OpenAI chunk adapter, AgentStream."""

import json
from collections.abc import Iterator, Mapping
from typing import Any

from agent_pipe.constants import CALLS_RAN, IMAGE_EVENT, MAX_EVENT_MB, MB, SOURCE_EVENT, USAGE, EventTooLarge
from agent_pipe.helpers import _json_or_none, _parts_concatenated, _str, random_hex

# === wire decoding: SSE, the OpenAI adapter, the event decoder ====================================


class SSEParser:
    """Server-sent events, line by line: returns an event's data when a blank line ends it."""

    def __init__(self) -> None:
        # the data lines of the event so far: AgentStream.feed holds this list, so it is cleared in
        # place, never reassigned
        self.lines: list[str] = []
        self.size = 0  # characters of data the event holds so far

    def feed(self, line: str) -> str | None:
        if not line:
            return self.flush()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if name == "data":
            value = value[1:] if value.startswith(" ") else value
            self.lines.append(value)
            self.size += len(value) + 1
        return None

    def flush(self) -> str | None:
        if not self.lines:
            return None
        data = "\n".join(self.lines)
        self.lines.clear()
        self.size = 0
        return data


class OpenAIChunkAdapter:
    """OpenAI chat-completion chunks as AG-UI-shaped events, so one recorder serves both transports.

    An OpenAI stream carries a call's result, if at all, as a ``tool`` delta right after the call.
    When text or reasoning follows calls whose results did not come, the agent ran them on its side
    and will not send them: the adapter says so (CALLS_RAN), so the text is not held below calls
    that would otherwise wait for a result until the run ends. (A result that still comes after
    that is not shown: the call's block has gone out.)
    """

    def __init__(self) -> None:
        self._calls_by_index: dict[int, str] = {}
        self._waiting: set[str] = set()  # calls started, no result seen
        self.finish_reason: str | None = None

    def events(self, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        error = chunk.get("error")
        if error:
            message = error.get("message") if isinstance(error, Mapping) else error
            return [{"type": "RUN_ERROR", "message": _str(message) or "The agent reported an error."}]
        out: list[dict[str, Any]] = []
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            text = delta.get("content")
            is_result = delta.get("role") == "tool" and delta.get("tool_call_id")
            said = any(isinstance(part, str) and part.strip() for part in (text, reasoning))
            if self._waiting and not is_result and said:
                self._waiting.clear()
                out.append({"type": CALLS_RAN})
            if isinstance(reasoning, str) and reasoning:
                out.append({"type": "REASONING_MESSAGE_CONTENT", "messageId": "reasoning", "delta": reasoning})
            if is_result:
                self._waiting.discard(_str(delta["tool_call_id"]))
                out.append(
                    {
                        "type": "TOOL_CALL_RESULT",
                        "toolCallId": delta["tool_call_id"],
                        "content": _parts_concatenated(text),
                    }
                )
            elif isinstance(text, str) and text:
                out.append({"type": "TEXT_MESSAGE_CONTENT", "delta": text})
            for call in delta.get("tool_calls") or []:
                index = call.get("index", len(self._calls_by_index))
                function = call.get("function") or {}
                call_id = _str(call.get("id")) or self._calls_by_index.get(index, "")
                if not call_id:
                    call_id = f"call-{random_hex()}"
                if index not in self._calls_by_index or function.get("name"):
                    self._calls_by_index[index] = call_id
                    self._waiting.add(call_id)
                    out.append(
                        {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": _str(function.get("name"))}
                    )
                if function.get("arguments"):
                    out.append({"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": _str(function["arguments"])})
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
            out.extend(openai_extras(delta))
        if isinstance(chunk.get("usage"), Mapping):  # the final chunk (stream_options.include_usage)
            out.append({"type": USAGE, "usage": chunk["usage"]})
        return out


def openai_extras(delta: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What an OpenAI delta carries beside the answer, as the events the Outbound reads."""
    annotations = delta.get("annotations")
    citations = (
        [a for a in annotations if isinstance(a, Mapping) and a.get("type") == "url_citation"]
        if isinstance(annotations, list)
        else []
    )
    out = [{"type": "CUSTOM", "name": SOURCE_EVENT, "value": citations}] if citations else []
    images = delta.get("images")
    if isinstance(images, list) and images:
        out.append({"type": "CUSTOM", "name": IMAGE_EVENT, "value": images})
    return out


# Events the pipe never reads, skipped before their JSON is parsed: ag-ui-langgraph's default
# stream sends a RAW event of its whole callback payload (1-2 KB) beside every token, and state
# snapshots can be larger than the answer. The SSE data line starts with the event's type (every
# AG-UI encoder writes "type" first), spaced or compact.
_SKIPPED_TYPES = ("RAW", "STATE_SNAPSHOT", "STATE_DELTA")
_SKIPPED = tuple(
    f'data:{space}{{"type":{gap}"{kind}"'.encode()
    for kind in _SKIPPED_TYPES
    for space in ("", " ")
    for gap in ("", " ")
)
# ag-ui-langgraph repeats the callback payload in every content event as "rawEvent", before the
# event's own fields: such an event is read from where its own fields start (the pipe never reads
# rawEvent). In JSON an unescaped '"messageId":' is always a key, and a string value cannot hold
# one: the last '},"messageId":' (or '},"subagentRunId":', which comes before it) ends rawEvent
# or a field after it; a cut that lands inside rawEvent leaves JSON that does not parse, and the
# line is then parsed whole.
_BULKY = tuple(
    (
        f'{{"type":{gap}"{kind}",{gap}"rawEvent":'.encode(),
        (f'}},{gap}"subagentRunId":{gap}'.encode(), f'}},{gap}"{key}":{gap}'.encode()),
        kind,
    )
    for kind, key in (("TEXT_MESSAGE_CONTENT", "messageId"), ("TOOL_CALL_ARGS", "toolCallId"))
    for gap in ("", " ")
)
_BULKY_STARTS = tuple(b"data: " + prefix for prefix, _, _ in _BULKY) + tuple(
    b"data:" + prefix for prefix, _, _ in _BULKY
)

# Agno reports each model request's token usage only as a RAW event of its own
# (ModelRequestCompleted, source "agno", which its encoder writes last, lines ending in "\n"):
# such a line is known by its end, so another server's RAW line costs one byte compare more, and
# only Agno's few RAW lines per run are parsed.
_AGNO_RAW_ENDS = (b'"source":"agno"}', b'"source": "agno"}')
_AGNO_COUNTS = {  # Agno's names -> the names usage_counts reads
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "total_tokens": "total_tokens",
    "reasoning_tokens": "reasoning_tokens",
    "cache_read_tokens": "cached_input_tokens",
}


def _agno_usage(line: bytes) -> dict[str, Any] | None:
    """The token counts of Agno's RAW ModelRequestCompleted event on a data line, or None."""
    _, _, data = line.partition(b":")
    event = _json_or_none(data.decode("utf-8", "replace"))
    inner = event.get("event") if isinstance(event, dict) else None
    if not isinstance(inner, dict) or inner.get("event") != "ModelRequestCompleted":
        return None
    counts = {ours: inner[theirs] for theirs, ours in _AGNO_COUNTS.items() if inner.get(theirs)}
    return counts or None


def _without_raw_event(buf: bytes, first: int, end: int) -> dict[str, Any] | None:
    """The bulky content event on the data line ``buf[first:end]`` parsed without its rawEvent, or
    None (then it is parsed whole)."""
    if buf.endswith(b"\r", first, end):
        end -= 1
    head = first + (6 if buf[first + 5] == 32 else 5)  # after "data:" and its optional space
    for prefix, (sub, key), kind in _BULKY:
        if buf.startswith(prefix, head):
            event = _fields_from(buf, buf.rfind(key, head, end), end)  # the usual: messageId right after
            if event is None:
                event = _fields_from(buf, buf.rfind(sub, head, end), end)
            if event is not None:
                event["type"] = kind
            return event
    return None


def _fields_from(body: bytes, cut: int, end: int) -> dict[str, Any] | None:
    """The event's own fields, from the key after ``cut`` (the "}," that ends rawEvent) to the end."""
    if cut < 0:
        return None
    try:
        event = json.loads("{" + body[cut + 2 : end].decode("utf-8", "replace"))
    except ValueError:
        return None
    return event if isinstance(event, dict) and isinstance(event.get("delta"), str) else None


def start_arguments(event: Mapping[str, Any]) -> str:
    """The arguments ag-ui-langgraph left out of a call's start, from the start's own rawEvent.

    ag-ui-langgraph (0.0.47) starts a call on the model's first chunk that names it and sends that
    chunk's arguments nowhere but in the TOOL_CALL_START's rawEvent (LangChain's
    on_chat_model_stream, the call being its first tool_call_chunk): a model that streams its calls
    in pieces lost their first piece, one that gives a call whole (Gemini's, any _generate-only
    model, a call without arguments) lost all of it. The pipe sends them on as the call's first
    TOOL_CALL_ARGS, so its arguments are whole in the stream and its block need not wait for the
    run's snapshot. "" for any other start."""
    raw = event.get("rawEvent")
    if not isinstance(raw, Mapping) or raw.get("event") != "on_chat_model_stream":
        return ""
    data = raw.get("data")
    chunk = data.get("chunk") if isinstance(data, Mapping) else None
    pieces = chunk.get("tool_call_chunks") if isinstance(chunk, Mapping) else None
    if not isinstance(pieces, list):
        return ""
    pieces = [p for p in pieces if isinstance(p, Mapping)]
    # the started call's own piece: by its id where the pieces carry ids, else the first
    first = next((p for p in pieces if p.get("id") == event.get("toolCallId")), None)
    if first is None and not any(p.get("id") for p in pieces):
        first = pieces[0] if pieces else None
    if first is None or first.get("name") != event.get("toolCallName"):
        return ""
    args = first.get("args")
    return args if isinstance(args, str) else ""


class AgentStream:
    """The events in an agent's response body, fed as it is read (pure: bytes in, AG-UI events out).

    AG-UI bodies are SSE whose data is an event; OpenAI bodies are SSE whose data is a chunk, made
    AG-UI-shaped by the OpenAIChunkAdapter, and ``[DONE]`` ends the run. ``feed`` is lazy: the
    first event of a large read is handled before the rest of the read is parsed. RAW and STATE_*
    events are dropped unparsed, and a content event's ``rawEvent`` is never parsed (nor passed on
    when a line had to be parsed whole). The one RAW event read is Agno's usage report (its only
    way to say what a model request cost), passed on as the run's usage so far.

    Linear in the body: a read is searched once, and the start of a line that a later read
    completes is kept as pieces, joined once when its end arrives (joining and searching it again
    on every read made a 40 MB line cost seconds of the event loop). A line or an event of more
    than ``max_event`` bytes raises EventTooLarge as soon as it is past the bound.
    """

    def __init__(self, transport: str, max_event: int = MAX_EVENT_MB * MB) -> None:
        self._parser = SSEParser()
        self._held: list[bytes] = []  # the start of a line a later read completes, in pieces
        self._held_size = 0
        self._max = max_event
        self._adapter = OpenAIChunkAdapter() if transport == "openai" else None
        self._done = False
        # lines read by their start (an OpenAI body's "type" means nothing: none)
        self._skipped, self._bulky = (_SKIPPED, _BULKY_STARTS) if self._adapter is None else ((), ())
        self._agno_usage: list[dict[str, int]] = []  # Agno's RAW usage reports so far
        self.raw_source = ""  # "agno" once a RAW event says so: which framework serves the agent

    def feed(self, raw: bytes) -> Iterator[dict[str, Any]]:
        parser, limit = self._parser, self._max
        end = raw.find(b"\n")
        if end < 0:
            self._hold(raw)
            return
        # The line is buf[first:end]: the first one joined with what earlier reads held, the others
        # read in place (a RAW line is never copied).
        buf, first = raw, 0
        if self._held:
            buf, self._held, self._held_size = b"".join((*self._held, raw[:end])), [], 0
            first, end, joined = 0, len(buf), end
        else:
            joined = end
        # Line by line as consumed, each line decoded on its own (SSE is UTF-8, and "\n" never
        # occurs inside a UTF-8 sequence): a read can hold thousands of lines, and the first
        # event must not wait for all of them to be split or decoded.
        skipped, bulky, pending = self._skipped, self._bulky, parser.lines  # pending: an unfinished event's lines
        while True:
            if end - first > limit:
                raise EventTooLarge(limit)
            start = joined + 1  # where the next line starts in this read
            if buf.startswith(skipped, first) and not pending:
                # RAW or STATE_*: never decoded nor parsed, nor its blank line
                if raw.startswith(b"\n", start):
                    start += 1
                if buf[end - 2] == 34 and buf.endswith(_AGNO_RAW_ENDS, first, end):  # 34: '"agno"}'s quote
                    self.raw_source = "agno"
                    if counts := _agno_usage(buf[first:end]):
                        self._agno_usage.append(counts)  # per model request: the run's usage is their sum
                        yield {"type": USAGE, "usage": list(self._agno_usage)}
            elif (
                buf.startswith(bulky, first)
                and not pending
                and raw.startswith(b"\n", start)
                and (event := _without_raw_event(buf, first, end)) is not None
            ):
                start += 1  # a content event read from its own fields on, rawEvent never parsed
                yield event
            else:
                text = buf[first:end].decode("utf-8", "replace")
                if text.endswith("\r"):
                    text = text[:-1]
                if text[:5] == "data:" and raw.startswith(b"\n", start) and not pending:
                    start += 1  # "data: ...\n\n", what nearly every event is: no parser needed
                    yield from self._events(text[6:] if text[5:6] == " " else text[5:])
                else:
                    data = parser.feed(text)
                    if parser.size > limit:
                        raise EventTooLarge(limit)
                    if data is not None:
                        yield from self._events(data)
            end = raw.find(b"\n", start)
            if end < 0:
                break
            buf, first, joined = raw, start, end
        self._hold(raw[start:])

    def _hold(self, piece: bytes) -> None:
        if piece:
            self._held.append(piece)
            self._held_size += len(piece)
            if self._held_size > self._max:
                raise EventTooLarge(self._max)

    def end(self) -> Iterator[dict[str, Any]]:
        """The events the body's end completes (a last event without its blank line)."""
        tail = b"".join(self._held).decode("utf-8", "replace").removesuffix("\r")
        self._held, self._held_size = [], 0
        for data in (self._parser.feed(tail) if tail else None, self._parser.flush()):
            if data is not None:
                yield from self._events(data)
        if self._adapter is not None and self._adapter.finish_reason and not self._done:
            self._done = True
            yield {"type": "RUN_FINISHED"}  # some servers end without [DONE]

    def _events(self, data: str) -> Iterator[dict[str, Any]]:
        if self._adapter is None:
            event = _json_or_none(data)
            if isinstance(event, dict) and event.get("type") not in (CALLS_RAN, USAGE):  # only the pipe says that
                lost = start_arguments(event) if event.get("type") == "TOOL_CALL_START" else ""
                if event.get("type") != "CUSTOM":  # on_interrupt's rawEvent holds LangGraph's interrupt id
                    event.pop("rawEvent", None)  # a framework's own payload: read only as above, never kept
                yield event
                if lost:  # as the call's first arguments (a subagent's call: its own, by the call id)
                    yield {"type": "TOOL_CALL_ARGS", "toolCallId": event.get("toolCallId"), "delta": lost}
            return
        if self._done:
            return
        if data.strip() == "[DONE]":
            self._done = True
            yield {"type": "RUN_FINISHED"}
            return
        chunk = _json_or_none(data)
        if isinstance(chunk, dict):
            yield from self._adapter.events(chunk)
