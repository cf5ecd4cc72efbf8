"""AgentStream and the frameworks' wire (issue 32): RAW and STATE_* events are dropped before their
JSON is parsed, a content event's bulky ``rawEvent`` is never parsed, and what is left is exactly
what a full parse gives, however the body is cut into reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.pipe_support import langgraph_tool_start
from tests.support.pipe_support import pipe_module as P

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "agui_captures"
AGNO_COUNTS = ("input_tokens", "output_tokens", "total_tokens", "reasoning_tokens", "cache_read_tokens")


def _read(body: bytes, size: int) -> list[dict[str, Any]]:
    stream = P.AgentStream("agui")
    events = [e for start in range(0, len(body), size) for e in stream.feed(body[start : start + size])]
    return events + list(stream.end())


def _expected(body: bytes) -> list[dict[str, Any]]:
    """A full parse of every data line, RAW and STATE_* left out and rawEvent dropped; Agno's RAW
    usage reports as the pipe's usage event (the reports so far), and the arguments of
    ag-ui-langgraph's call starts (in their rawEvent only) as the call's first TOOL_CALL_ARGS."""
    out: list[dict[str, Any]] = []
    agno: list[dict[str, int]] = []
    for line in body.decode().splitlines():
        if line.startswith("data:"):
            event = json.loads(line[5:])
            inner = event.get("event") if event["type"] == "RAW" else {}
            if event.get("source") == "agno" and inner["event"] == "ModelRequestCompleted":
                names = {"cache_read_tokens": "cached_input_tokens"}
                agno.append({names.get(k, k): v for k, v in inner.items() if k in AGNO_COUNTS and v})
                out.append({"type": P.USAGE, "usage": list(agno)})
            if event["type"] in ("RAW", "STATE_SNAPSHOT", "STATE_DELTA"):
                continue
            raw = event.get("rawEvent") or {}
            if event["type"] != "CUSTOM":  # on_interrupt's rawEvent holds LangGraph's interrupt id
                event.pop("rawEvent", None)
            out.append(event)
            if event["type"] == "TOOL_CALL_START" and raw.get("event") == "on_chat_model_stream":
                # ag-ui-langgraph's start holds its chunk's arguments only there: the call's first ones
                first = raw["data"]["chunk"]["tool_call_chunks"][0]
                if first["name"] == event["toolCallName"] and first["args"]:
                    out.append({"type": "TOOL_CALL_ARGS", "toolCallId": event["toolCallId"], "delta": first["args"]})
    return out


def _sse(events: list[dict[str, Any]], compact: bool = True) -> bytes:
    separators = (",", ":") if compact else (", ", ": ")
    return b"".join(f"data: {json.dumps(e, separators=separators)}\n\n".encode() for e in events)


PAYLOAD = {"event": "on_chat_model_stream", "data": {"chunk": {"content": "Hi", "id": "lc-1", "messageId": {"x": 1}}}}
EVENTS: list[dict[str, Any]] = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "RAW", "event": PAYLOAD, "source": "langgraph"},
    {"type": "STATE_SNAPSHOT", "snapshot": {"messages": ["x" * 500]}},
    {"type": "TEXT_MESSAGE_CONTENT", "rawEvent": PAYLOAD, "messageId": "m1", "delta": 'he said "},"messageId":"x"'},
    {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1}]},
    {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f"},
    {"type": "TOOL_CALL_ARGS", "rawEvent": PAYLOAD, "toolCallId": "c1", "delta": '{"a": 1}'},
    {"type": "TEXT_MESSAGE_CONTENT", "rawEvent": PAYLOAD, "subagentRunId": "s1", "messageId": "m2", "delta": "é"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]


@pytest.mark.parametrize("compact", [True, False])
def test_raw_and_state_events_are_dropped_and_raw_event_never_reaches_the_recorder(compact: bool) -> None:
    body = _sse(EVENTS, compact)
    got = _read(body, len(body))
    assert got == _expected(body)
    assert [e["delta"] for e in got if e["type"] == "TEXT_MESSAGE_CONTENT"] == ['he said "},"messageId":"x"', "é"]
    assert got[-2]["subagentRunId"] == "s1"  # fields between rawEvent and the event's own are kept


def test_every_cut_of_a_body_with_raw_events_gives_the_same_events() -> None:
    body = _sse(EVENTS)
    expected = _read(body, len(body))
    for size in range(1, len(body) + 1, 7):
        assert _read(body, size) == expected, size


def test_a_content_event_whose_fields_cannot_be_found_is_parsed_whole() -> None:
    # no top-level messageId after rawEvent: the cut would land inside rawEvent, so the whole line is parsed
    odd = {"type": "TEXT_MESSAGE_CONTENT", "rawEvent": {"a": {"b": 1}, "messageId": "inner"}, "delta": "x"}
    body = _sse([odd])
    assert _read(body, len(body)) == [{"type": "TEXT_MESSAGE_CONTENT", "delta": "x"}]


def test_openai_bodies_are_not_read_by_their_start() -> None:
    chunk = {"type": "RAW", "choices": [{"index": 0, "delta": {"content": "hi"}}]}  # "type" means nothing there
    stream = P.AgentStream("openai")
    assert list(stream.feed(f"data: {json.dumps(chunk, separators=(',', ':'))}\n\n".encode())) == [
        {"type": "TEXT_MESSAGE_CONTENT", "delta": "hi"}
    ]


@pytest.mark.parametrize("capture", sorted(str(p.relative_to(CAPTURES)) for p in CAPTURES.glob("*/*.sse")))
def test_every_capture_reads_as_a_full_parse_does(capture: str) -> None:
    body = (CAPTURES / capture).read_bytes()
    assert _read(body, 4096) == _expected(body)


# --- Agno's usage: a RAW event of its own ------------------------------------------------------------


def _agno_raw(event: str, **counts: int) -> dict[str, Any]:
    inner = {"created_at": 1796414471, "event": event, "agent_id": "a", "run_id": "r", **counts}
    return {"type": "RAW", "event": inner, "source": "agno"}


def test_agnos_usage_reports_are_read_from_its_raw_events_and_added_up() -> None:
    counts = {"input_tokens": 20, "output_tokens": 8, "total_tokens": 28, "reasoning_tokens": 0}
    body = _sse(
        [
            _agno_raw("ModelRequestStarted"),
            _agno_raw("ModelRequestCompleted", **counts),
            {"type": "RAW", "event": {"event": "ModelRequestCompleted", "input_tokens": 99}, "source": "other"},
            _agno_raw("ModelRequestCompleted", input_tokens=40, output_tokens=6, total_tokens=46, cache_read_tokens=3),
        ]
    )
    first = {"input_tokens": 20, "output_tokens": 8, "total_tokens": 28}  # a zero count is no report
    second = {"input_tokens": 40, "output_tokens": 6, "total_tokens": 46, "cached_input_tokens": 3}
    assert _read(body, 5) == [{"type": P.USAGE, "usage": [first]}, {"type": P.USAGE, "usage": [first, second]}]
    recorder = P.Recorder(scrubber=P.Scrubber())
    for event in _read(body, len(body)):
        recorder.feed(event)
    usage = recorder.outbound.take_usage()
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (60, 14, 74)
    assert usage["prompt_tokens_details"] == {"cached_tokens": 3}


def test_an_agno_run_shows_the_usage_of_its_model_requests() -> None:
    """The capture of Agno's tool scenario: two model requests (20+8 and 40+6 tokens)."""
    recorder = P.Recorder(scrubber=P.Scrubber())
    for event in _read((CAPTURES / "agno" / "tool.sse").read_bytes(), 1024):
        recorder.feed(event)
    usage = recorder.outbound.take_usage()
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (60, 14, 74)


def test_a_server_cannot_pass_its_own_usage_event_off_as_the_pipes() -> None:
    body = _sse([{"type": P.USAGE, "usage": {"input_tokens": 5}}, _agno_raw("RunStarted")])
    assert _read(body, len(body)) == []


@pytest.mark.parametrize(
    ("capture", "source"), [("agno/approve.sse", "agno"), ("langgraph/tool.sse", ""), ("pydantic_ai/tool.sse", "")]
)
def test_a_raw_event_of_agno_names_the_agents_framework(capture: str, source: str) -> None:
    # Agno's paused calls are answered in its own shape: the pipe knows it by its RAW events' source
    stream = P.AgentStream("agui")
    body = (CAPTURES / capture).read_bytes()
    for start in range(0, len(body), 97):
        list(stream.feed(body[start : start + 97]))
    assert stream.raw_source == source


@pytest.mark.parametrize("compact", [True, False])
def test_a_raw_events_source_is_its_own_not_one_inside_its_payload(compact: bool) -> None:
    stream = P.AgentStream("agui")
    list(stream.feed(_sse([{"type": "RAW", "event": {"x": {"source": "agno"}}}], compact)))  # no source of its own
    assert stream.raw_source == ""
    stream = P.AgentStream("agui")
    list(stream.feed(_sse([{"type": "RAW", "event": {"source": "inner"}, "source": "agno"}], compact)))
    assert stream.raw_source == "agno"


def test_a_starts_own_arguments_are_the_piece_of_its_own_call() -> None:
    """Two calls of one tool in one chunk: each start takes its own call's arguments, by id."""
    pieces = [
        {"id": "call_a", "name": "lookup", "args": '{"order": 1}'},
        {"id": "call_b", "name": "lookup", "args": '{"order": 2}'},
    ]
    assert P.start_arguments(langgraph_tool_start("call_b", "lookup", pieces=pieces)) == '{"order": 2}'
    assert P.start_arguments(langgraph_tool_start("call_a", "lookup", pieces=pieces)) == '{"order": 1}'
    assert P.start_arguments(langgraph_tool_start("call_c", "lookup", pieces=pieces)) == ""  # none of its own
    no_ids = [{"name": "lookup", "args": "{}"}]
    assert (
        P.start_arguments(langgraph_tool_start("call_x", "lookup", pieces=no_ids)) == "{}"
    )  # pieces without ids: the first
    assert P.start_arguments(langgraph_tool_start("call_x", "other", pieces=no_ids)) == ""
    assert P.start_arguments({"type": "TOOL_CALL_START", "toolCallId": "call_a", "toolCallName": "lookup"}) == ""
