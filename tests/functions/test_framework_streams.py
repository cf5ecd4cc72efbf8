"""The frameworks' own streams through the Recorder (issue 32, items 3-4): what each one's server sent
(tests/data/agui_captures, recorded from the real servers) shows in stream order, with what its
MESSAGES_SNAPSHOT says beyond the stream, and results as the text they hold."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.pipe_support import (
    FINISHED,
    SIGNER,
    C,
    R,
    T,
    events,
    langgraph_tool_start,
    record,
    shape,
    turn_signer,
)
from tests.support.pipe_support import pipe_module as P

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "agui_captures"


def _read(body: bytes) -> list[dict[str, Any]]:
    """SSE bytes through AgentStream, in reads of 1 KB: the events the pipe's Recorder gets."""
    stream = P.AgentStream("agui")
    return [e for i in range(0, len(body), 1024) for e in stream.feed(body[i : i + 1024])] + list(stream.end())


def replay(name: str, **kwargs: Any) -> Any:
    """A capture's bytes through AgentStream (in reads of 1 KB) and a Recorder, drained per event."""
    return record(_read((CAPTURES / name).read_bytes()), check=False, **kwargs)  # what a real server sent, as sent


def calls(segments: list[Any]) -> list[Any]:
    return [c for s in segments if isinstance(s, P.ToolStep) for c in s.calls]


# --- arguments the stream lost ----------------------------------------------------------------------


def test_langgraphs_first_argument_chunk_comes_from_its_start_and_the_block_shows_at_its_result() -> None:
    # ag-ui-langgraph 0.0.47 sends the first tool-call chunk's arguments ('{"ord') only in the
    # TOOL_CALL_START's rawEvent: 'er": "10023"}' streamed, and the block waited for the snapshot
    wire = _read((CAPTURES / "langgraph" / "tool.sse").read_bytes())
    recording = record(wire, check=False)
    result = next(i for i, e in enumerate(wire) if e["type"] == "TOOL_CALL_RESULT")
    assert 'id="' in recording.drains[result] and "MESSAGES_SNAPSHOT" not in [e["type"] for e in wire[: result + 1]]
    (call,) = calls(recording.recorder.segments)
    assert call.arguments == '{"order": "10023"}'
    assert shape(recording.recorder.segments)[1:] == [
        f"TC[{call.id}]",
        f"tool({call.id})",
        'A"Order 10023 has shipped."',
    ]
    assert recording.recorder.segments[0].text == "Let me look up order 10023."
    assert recording.streamed == recording.recorder.render()  # the step waited for the snapshot, nothing redone
    assert 'arguments="er&quot;' not in recording.streamed


def test_a_step_with_arguments_that_are_not_json_waits_for_the_snapshot_and_text_stays_below() -> None:
    lost = [
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": 'a": 1}'},
    ]
    snapshot = {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [
            {"id": "u", "role": "user", "content": "q"},
            {
                "id": "m",
                "role": "assistant",
                "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}],
            },
        ],
    }
    recording = record(events(lost, R("c1"), T("after"), [snapshot], FINISHED))
    assert "".join(recording.drains[:4]) == ""  # held: its arguments may still come whole
    assert recording.recorder.segments[0].calls[0].arguments == '{"a": 1}'
    assert recording.streamed.index('id="c1"') < recording.streamed.index("after")


def _sse(*stream: dict[str, Any]) -> bytes:
    return b"".join(f"data: {json.dumps(e, separators=(',', ':'))}\n\n".encode() for e in stream)


def test_a_call_whose_arguments_came_whole_with_its_start_shows_them_when_its_result_comes() -> None:
    # ag-ui-langgraph 0.0.47 sends no TOOL_CALL_ARGS when the model's first chunk holds the whole
    # call (a model that does not stream its calls in pieces: Gemini's, or any _generate-only one):
    # the block showed arguments="" while the closing snapshot had {"city": "Paris"}; then it
    # waited, with the rest of the answer, for that snapshot. The start's rawEvent has them.
    snapshot = {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [
            {"id": "u", "role": "user", "content": "q"},
            {
                "id": "m",
                "role": "assistant",
                "toolCalls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
        ],
    }
    start = [
        langgraph_tool_start("c1", "get_weather", '{"city": "Paris"}'),
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
    ]
    wire = _read(_sse(*events(start, R("c1"), T("after"), [snapshot], FINISHED)))
    assert [e["type"] for e in wire[:3]] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
    recording = record(wire, check=False)
    assert recording.recorder.segments[0].calls[0].arguments == '{"city": "Paris"}'
    assert "city" in recording.drains[3] and "after" in recording.drains[4]  # at its result; the text as it came
    assert recording.streamed == recording.recorder.render()


def test_a_start_whose_raw_event_is_another_calls_adds_no_arguments() -> None:
    other = langgraph_tool_start("c1", "get_weather", '{"city": "Paris"}')
    other["toolCallName"] = "now"  # not the chunk's call: nothing of it is this call's
    plain = {"type": "TOOL_CALL_START", "rawEvent": {"event": "on_tool_end"}, "toolCallId": "c2", "toolCallName": "f"}
    assert [e["type"] for e in _read(_sse(other, plain))] == ["TOOL_CALL_START", "TOOL_CALL_START"]


def test_a_call_without_arguments_shows_at_its_result_and_the_text_after_it_streams() -> None:
    # ag-ui-adk sends no TOOL_CALL_ARGS for a call without arguments, and no snapshot: the block
    # and the rest of the answer waited for the run's end
    start = [{"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "now"}]
    recording = record(events(start, R("c1"), T("after"), FINISHED))
    assert recording.recorder.segments[0].calls[0].arguments == ""
    assert 'id="c1"' in recording.drains[1] and "after" in recording.drains[2]
    assert recording.streamed == recording.recorder.render()


def test_arguments_that_are_not_json_and_no_snapshot_show_as_they_came_at_the_end() -> None:
    lost = [
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": 'a": 1}'},
    ]
    recording = record(events(lost, R("c1"), T("after"), FINISHED))
    assert recording.recorder.segments[0].calls[0].arguments == 'a": 1}'
    assert recording.streamed == recording.recorder.render()


# What each framework's own server sent for a tool that takes no arguments (the no_args captures:
# the model gives the call "{}" whole with its name and id): the deltas of its arguments events,
# and when its MESSAGES_SNAPSHOTs came ("mid-run": text or a call came after one).
NO_ARGUMENTS = {
    "adk": ([], "none"),  # ag-ui-adk sends TOOL_CALL_ARGS only for a call with arguments
    "agent_framework": (["{}"], "at the end"),
    "agno": (["{}"], "none"),
    "crewai": (["{}"], "at the end"),  # its answer only in the snapshots
    "langgraph": ([], "at the end"),  # "{}" only in the TOOL_CALL_START's rawEvent
    "llamaindex": (["{}"], "mid-run"),  # a TOOL_CALL_CHUNK; its result only in a snapshot
    "pydantic_ai": (["{}"], "none"),
    "strands": (["{}"], "mid-run"),  # one after each step
}


def _sent(name: str) -> list[dict[str, Any]]:
    """The capture's events as the server sent them (RAW, STATE_* and STEP_* left out)."""
    body = (CAPTURES / name / "no_args.sse").read_text()
    sent = [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:")]
    return [e for e in sent if not e["type"].startswith(("RAW", "STATE_", "STEP_"))]


@pytest.mark.parametrize("name", sorted(NO_ARGUMENTS))
def test_a_tool_without_arguments_and_the_text_after_it_stream_as_they_come(name: str) -> None:
    sent = _sent(name)
    kinds = [e["type"] for e in sent]
    snapshots = [i for i, kind in enumerate(kinds) if kind == "MESSAGES_SNAPSHOT"]
    mid_run = snapshots and any(k.startswith(("TEXT_", "TOOL_")) for k in kinds[snapshots[0] :])
    when = "mid-run" if mid_run else "at the end" if snapshots else "none"
    deltas = [e["delta"] for e in sent if e["type"] in ("TOOL_CALL_ARGS", "TOOL_CALL_CHUNK")]
    assert (deltas, when) == NO_ARGUMENTS[name]
    wire = _read((CAPTURES / name / "no_args.sse").read_bytes())
    recording = record(wire, check=False)
    (call,) = calls(recording.recorder.segments)
    assert call.name == "current_time" and json.loads(call.arguments or "{}") == {} and call.result is not None
    # the block goes out with the event that completes it, the answer's end with the event that carries it
    result = next(i for i, e in enumerate(wire) if "12:00" in json.dumps(e))
    noon = next(i for i, e in enumerate(wire) if "noon" in json.dumps(e))
    assert f'id="{call.id}"' in recording.drains[result] and "noon" in recording.drains[noon]
    assert recording.streamed == recording.recorder.render()


# --- what only a snapshot says ----------------------------------------------------------------------


def _snapshot(*messages: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u1", "role": "user", "content": "q"}, *messages]}]


def test_an_answer_only_in_the_snapshot_shows_after_what_streamed() -> None:
    # CrewAI's flows stream the tool call, and the answer only in the closing MESSAGES_SNAPSHOT
    snap = _snapshot(
        {
            "id": "a1",
            "role": "assistant",
            "content": "",
            "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}],
        },
        {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "result of c1"},
        {"id": "a2", "role": "assistant", "content": "It is sunny."},
    )
    recording = record(events(C("c1"), R("c1"), snap, FINISHED))
    assert shape(recording.recorder.segments) == ["TC[c1]", "tool(c1)", 'A"It is sunny."']
    assert recording.streamed == recording.recorder.render()


def test_a_result_only_in_the_snapshot_fills_its_call() -> None:
    recording = replay("llamaindex/tool.sse")  # only *_CHUNK events, the result only in snapshots
    (call,) = calls(recording.recorder.segments)
    assert call.result is not None and call.name == "lookup_order"
    assert shape(recording.recorder.segments) == [
        'A"Let me look up order 10023."',
        f"TC[{call.id}]",
        f"tool({call.id})",
        'A"Order 10023 has shipped."',
    ]
    assert "Executing..." not in recording.streamed


def test_snapshots_that_repeat_the_stream_with_new_ids_add_nothing() -> None:
    # LlamaIndex re-keys its messages in every snapshot; Strands sends one after each step
    snap = _snapshot(
        {
            "id": "new-1",
            "role": "assistant",
            "content": "Hello there.",
            "toolCalls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
            ],
        },
        {"id": "new-2", "role": "tool", "toolCallId": "c1", "content": "result of c1"},
    )
    stream = events(T("Hello"), T(" there."), C("c1"), R("c1"), snap, snap, T("Bye."), snap, FINISHED)
    assert shape(record(stream).recorder.segments) == ['A"Hello there."', "TC[c1]", "tool(c1)", 'A"Bye."']


def test_the_snapshot_never_reorders_what_streamed() -> None:
    snap = _snapshot(
        {"id": "x", "role": "assistant", "content": "sum"},
        {
            "id": "y",
            "role": "assistant",
            "content": "",
            "toolCalls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
            ],
        },
        {"id": "z", "role": "tool", "toolCallId": "c1", "content": "changed"},
    )
    stream = events(T("lead"), C("c1"), R("c1"), T("sum", "t2"), snap, FINISHED)
    plain = events(T("lead"), C("c1"), R("c1"), T("sum", "t2"), FINISHED)
    signer = turn_signer("t")
    assert record(stream, signer=signer).streamed == record(plain, signer=turn_signer("t")).streamed


def test_agnos_paused_run_does_not_repeat_its_text() -> None:
    recording = replay("agno/approve.sse")  # the paused run's content comes again as a message of its own
    assert recording.recorder.segments[0].text == "I will cancel order 10023."


# --- results as the text they hold ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "shown"),
    [
        ('"Booked Ritz."', "Booked Ritz."),  # Agno, Strands: a JSON-encoded string
        ('{"result": "order 10023 shipped"}', "order 10023 shipped"),  # ADK
        ('{"result": {"sky": "sunny"}}', '{"sky": "sunny"}'),
        ('"{\\"result\\": \\"ok\\"}"', "ok"),
        ('{"result": "x", "extra": 1}', '{"result": "x", "extra": 1}'),  # not ADK's wrapper: as it came
        ('{"city": "Paris"}', '{"city": "Paris"}'),
        ("42", "42"),
        ('"unterminated', '"unterminated'),
        ([{"type": "text", "text": "line one"}, {"type": "text", "text": "line two"}], "line one\nline two"),
    ],
)
def test_a_result_shows_as_the_text_it_holds(content: Any, shown: str) -> None:
    result = {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "r1", "content": content}
    assert record(events(C("c1"), [result], FINISHED)).recorder.segments[0].calls[0].result == shown


def test_agnos_json_encoded_result_shows_unquoted() -> None:
    (call,) = calls(replay("agno/approve.resume-approved.sse").recorder.segments)
    assert call.result == "order 10023 cancelled"  # sent as '"order 10023 cancelled"'


PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


def test_a_results_image_parts_go_to_the_file_store_and_its_text_shows() -> None:
    content = [
        {"type": "text", "text": "Here is the chart."},
        {"type": "image", "source": {"type": "data", "value": base64.b64encode(PNG).decode(), "mimeType": "image/png"}},
        {"type": "image", "source": {"type": "url", "value": "https://example.org/c.png"}},
    ]
    result = {"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "messageId": "r1", "content": content}
    recorder = record(events(C("c1"), [result], FINISHED)).recorder
    assert recorder.segments[0].calls[0].result == "Here is the chart."
    assert recorder.outbound.images == [("image/png", PNG)]
    assert recorder.outbound.image_links == ["https://example.org/c.png"]
    assert "iVBOR" not in recorder.render()


@pytest.mark.parametrize("capture", sorted(str(p.relative_to(CAPTURES)) for p in CAPTURES.glob("*/*.sse")))
def test_what_streams_of_every_capture_is_its_final_rendering(capture: str) -> None:
    recording = replay(capture)
    assert recording.streamed == recording.recorder.render()
    assert P.parse_content(recording.recorder.render()) == recording.recorder.segments


# --- AG-UI 1.0's activities and reasoning ------------------------------------------------------------


def test_activities_show_in_the_status_line_and_a_delta_patches_the_snapshot() -> None:
    stream: list[dict[str, Any]] = [
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "a1", "activityType": "search", "content": {"status": "Searching"}},
        {
            "type": "ACTIVITY_DELTA",
            "messageId": "a1",
            "activityType": "search",
            "patch": [{"op": "replace", "path": "/status", "value": "Reading 3 pages"}],
        },
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "a2", "activityType": "plan_step", "content": {"n": 1}},
        *T("Found it."),
        *FINISHED,
    ]
    recorder = record(stream).recorder
    steps = [s["description"] for s in recorder.statuses if s.get("step")]
    assert steps == ["Searching…", "Reading 3 pages…", "plan step…"]
    assert shape(recorder.segments) == ['A"Found it."']


def test_json_patch_add_replace_remove() -> None:
    doc = {"a": {"b": [1, 2]}, "c": 1}
    patch = [
        {"op": "add", "path": "/a/b/-", "value": 3},
        {"op": "remove", "path": "/c"},
        {"op": "replace", "path": "/a/b/0", "value": 0},
        {"op": "remove", "path": "/missing/x"},
    ]
    assert P.json_patched(doc, patch) == {"a": {"b": [0, 2, 3]}}
    assert doc == {"a": {"b": [1, 2]}, "c": 1}  # a copy is patched


@pytest.mark.parametrize(
    "events_of",
    [
        lambda rid, text: [
            {"type": "REASONING_START", "messageId": rid},
            {"type": "REASONING_MESSAGE_START", "messageId": rid, "role": "reasoning"},
            {"type": "REASONING_MESSAGE_CONTENT", "messageId": rid, "delta": text},
            {"type": "REASONING_MESSAGE_END", "messageId": rid},
            {"type": "REASONING_END", "messageId": rid},
        ],
        lambda rid, text: [{"type": "REASONING_MESSAGE_CHUNK", "messageId": rid, "delta": text}],
        lambda rid, text: [
            {"type": "THINKING_START", "title": "t"},
            {"type": "THINKING_TEXT_MESSAGE_START"},
            {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": text},
            {"type": "THINKING_TEXT_MESSAGE_END"},
            {"type": "THINKING_END"},
        ],
    ],
)
def test_reasoning_of_1_0_and_thinking_of_older_servers_show_as_one_block(events_of: Any) -> None:
    recorder = record(events(events_of("r1", "Let me think."), T("Answer."), FINISHED)).recorder
    assert [type(s).__name__ for s in recorder.segments] == ["Reasoning", "Text"]
    assert recorder.segments[0].text == "Let me think."


# --- AG-UI 1.0's subagents ---------------------------------------------------------------------------


def _sub(event: dict[str, Any], run_id: str = "sub-1") -> dict[str, Any]:
    return {**event, "subagentRunId": run_id}


SUBAGENT_RUN = events(
    T("I will ask the researcher."),
    C("task-1", "research", '{"topic": "Paris"}'),
    [{"type": "SUBAGENT_STARTED", "subagentRunId": "sub-1", "name": "researcher", "parentToolCallId": "task-1"}],
    [_sub(e) for e in T("Looking it up.", "s-t1")],
    [_sub(e) for e in C("c9", "web_search", '{"q": "Paris"}')],
    [{"type": "TOOL_CALL_RESULT", "toolCallId": "c9", "messageId": "r9", "content": "sunny"}],  # its call: its block
    [_sub(e) for e in T("Paris is sunny.", "s-t2")],
    [{"type": "SUBAGENT_FINISHED", "subagentRunId": "sub-1"}],
    R("task-1", "Paris is sunny."),
    T("The researcher says Paris is sunny.", "t9"),
    FINISHED,
)


def test_a_subagents_text_and_calls_show_as_its_own_block_in_stream_order() -> None:
    recording = record(SUBAGENT_RUN)
    segments = recording.recorder.segments
    assert [type(s).__name__ for s in segments] == ["Text", "ToolStep", "Subagent", "Text"]
    subagent = segments[2]
    assert subagent.name == "researcher" and not subagent.failed
    assert shape(subagent.segments) == ['A"Looking it up."', "TC[c9]", "tool(c9)", 'A"Paris is sunny."']
    assert segments[1].calls[0].result == "Paris is sunny."  # the spawning call's result is the agent's
    assert recording.streamed == recording.recorder.render()
    assert recording.streamed.index('type="subagent"') < recording.streamed.index("The researcher says")
    assert "<summary>researcher</summary>" in recording.streamed


def test_a_subagent_block_parses_back_and_never_reaches_the_agents_history() -> None:
    recorder = record(SUBAGENT_RUN).recorder
    content = recorder.render()
    assert P.parse_content(content) == recorder.segments
    history = [{"role": "user", "content": "q"}, {"role": "assistant", "content": content}]
    messages = P.to_agui_messages(history, SIGNER)
    assert [c["id"] for m in messages for c in m.get("toolCalls", [])] == ["task-1"]  # not the subagent's c9
    assert "Looking it up." not in json.dumps(messages)


def test_a_subagent_error_shows_in_its_block_and_the_run_goes_on() -> None:
    stream = events(
        [{"type": "SUBAGENT_STARTED", "subagentRunId": "sub-1", "name": "coder"}],
        [_sub(e) for e in C("c1", "run_code")],
        [{"type": "SUBAGENT_ERROR", "subagentRunId": "sub-1", "message": "sandbox died", "code": "E1"}],
        T("The coder failed; here is a guess."),
        FINISHED,
    )
    recording = record(stream)
    subagent = recording.recorder.segments[0]
    assert subagent.failed and shape(subagent.segments) == ["TC[c1]", "tool(c1)", 'ERR"sandbox died (E1)"']
    assert subagent.segments[0].calls[0].failed
    assert recording.streamed.endswith("The coder failed; here is a guess.")
    assert "Executing..." not in recording.streamed


def test_a_subagent_without_its_start_event_or_finish_still_gets_a_closed_block() -> None:
    stream = events([_sub(e, "s2") for e in T("working", "x")], [_sub(e, "s2") for e in C("c1")], FINISHED)
    recording = record(stream)
    (subagent,) = recording.recorder.segments
    assert subagent.name == "subagent"
    assert subagent.segments[1].calls[0].result == "Not run: the subagent ended before this tool returned a result."
    assert "Executing..." not in recording.streamed
