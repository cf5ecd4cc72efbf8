"""The stream-order scenarios S1-S16 of reference/agui-snapshot-order.md §3.3, as event lists.

Each scenario checks four things: the segments in stream order (the sheet's "expected" column),
that what streamed equals the final rendering, that rendering parses back to the same segments
with the same ids, and the AG-UI transcript the agent gets on the next turn, without duplicates.

Contracts this file pins (the sheet leaves them to us):
- S9 (error mid-turn): everything that completed stays, in order, and an error alert goes last.
  The next turn replays what completed (text, call, result) and not the alert. This is the
  sheet's option (b) seen from the client: the pipe never waits for a snapshot.
- S13: text between a call and its result comes after the call's block; the result stays in it.
  Text that streamed as two messages with nothing between them is one text segment (a paragraph
  break joins them), because stored content cannot tell them apart on the next turn.
- S14: reasoning splits text: A"A", rs(r1), A"B" (strict stream order, unlike 1.7.0).
- S15: text between parallel calls splits them into two steps: TC[c1], tool, A"x", TC[c2], tool
  (strict stream order, the same as 1.7.0).
- S16: calls whose results never stream are shown with done="false"; the text after them is held
  until the run ends, so it still lands below them.
- The sheet's table has no S12; the numbering skips it.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.pipe_support import (
    ERROR,
    FINISHED,
    OPEN,
    SIGNER,
    C,
    FakeClock,
    R,
    T,
    Z,
    agui_shape,
    events,
    pipe_module,
    record,
    shape,
    turn_signer,
)

P = pipe_module

SCENARIOS: dict[str, tuple[list[dict[str, Any]], list[str]]] = {
    "S1 text only": (events(T("Hello"), T(" world"), FINISHED), ['A"Hello world"']),
    "S2 lead-in + tool + summary": (
        events(T("lead"), C("c1"), R("c1"), T("sum"), FINISHED),
        ['A"lead"', "TC[c1]", "tool(c1)", 'A"sum"'],
    ),
    "S3 lead-in only": (events(T("lead"), C("c1"), R("c1"), FINISHED), ['A"lead"', "TC[c1]", "tool(c1)"]),
    "S4 summary only": (events(C("c1"), R("c1"), T("sum"), FINISHED), ["TC[c1]", "tool(c1)", 'A"sum"']),
    "S5 two rounds": (
        events(T("a"), C("c1"), R("c1"), T("b"), C("c2"), R("c2"), T("c"), FINISHED),
        ['A"a"', "TC[c1]", "tool(c1)", 'A"b"', "TC[c2]", "tool(c2)", 'A"c"'],
    ),
    "S6 parallel": (
        events(T("a"), C("c1"), C("c2"), R("c1"), R("c2"), T("b"), FINISHED),
        ['A"a"', "TC[c1,c2]", "tool(c1)", "tool(c2)", 'A"b"'],
    ),
    "S7 reasoning": (
        events(Z("r1", "think"), T("lead"), C("c1"), R("c1"), Z("r2", "more"), T("fin"), FINISHED),
        ["rs(r1)", 'A"lead"', "TC[c1]", "tool(c1)", "rs(r2)", 'A"fin"'],
    ),
    "S8 client tool, no result": (events(T("lead"), C("c1"), FINISHED), ['A"lead"', "TC[c1]"]),
    "S9 error mid-turn": (
        events(T("lead"), C("c1"), R("c1"), ERROR("boom", "RuntimeError")),
        ['A"lead"', "TC[c1]", "tool(c1)", 'ERR"boom (RuntimeError)"'],
    ),
    "S10 empty chunks": (
        events(T(""), T("Hi"), T(""), C("c1"), R("c1"), T(""), T("  \n"), FINISHED),
        ['A"Hi"', "TC[c1]", "tool(c1)"],
    ),
    "S11 tool only": (events(C("c1"), R("c1"), FINISHED), ["TC[c1]", "tool(c1)"]),
    "S13 text between call and result": (
        events(C("c1"), T("x", "t1"), R("c1"), T("y", "t2"), FINISHED),
        ["TC[c1]", "tool(c1)", 'A"x\n\ny"'],
    ),
    "S14 text, reasoning, text": (
        events(T("A"), Z("r1", "hmm"), T("B"), C("c1"), R("c1"), FINISHED),
        ['A"A"', "rs(r1)", 'A"B"', "TC[c1]", "tool(c1)"],
    ),
    "S15 parallel split by text": (
        events(C("c1"), T("x"), C("c2"), R("c1"), R("c2"), FINISHED),
        ["TC[c1]", "tool(c1)", 'A"x"', "TC[c2]", "tool(c2)"],
    ),
    "S16 hosted tools, no results": (
        events(T("lead"), C("m1", "mcp_search"), C("m2", "mcp_fetch"), T("sum"), FINISHED),
        ['A"lead"', "TC[m1,m2]", 'A"sum"'],
    ),
}


def _history(content: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "question"},
        {"role": "assistant", "content": content},
        {"role": "user", "content": "follow-up"},
    ]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_segments_follow_stream_order(name: str) -> None:
    stream, expected = SCENARIOS[name]
    assert shape(record(stream).recorder.segments) == expected


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_streamed_output_is_the_final_rendering(name: str) -> None:
    recording = record(SCENARIOS[name][0])
    assert recording.streamed == recording.recorder.render()


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_rendering_parses_back_to_the_same_segments_and_ids(name: str) -> None:
    recorder = record(SCENARIOS[name][0]).recorder
    assert P.parse_content(recorder.render()) == recorder.segments


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_next_turn_transcript_keeps_order_without_duplicates(name: str) -> None:
    _, expected = SCENARIOS[name]
    content = record(SCENARIOS[name][0]).recorder.render()
    messages = P.to_agui_messages(_history(content), SIGNER)
    replayed = [item for item in expected if not item.startswith(("rs(", "ERR"))]
    assert agui_shape(messages) == ['user"question"', *replayed, 'user"follow-up"']
    ids = [m["id"] for m in messages]
    assert len(ids) == len(set(ids))
    call_ids = [c["id"] for m in messages for c in m.get("toolCalls", [])]
    assert len(call_ids) == len(set(call_ids))


# --- ids -------------------------------------------------------------------------------------------


def test_ids_are_the_streamed_ids() -> None:
    # 1.7.0 shape: the call's parentMessageId is a fresh segment id; results carry their own ids.
    stream = events(
        OPEN("t1"),
        T("lead", "t1"),
        C("c1", parent="tc-seg-1"),
        R("c1", mid="res-1"),
        Z("r9", "why"),
        T("sum", "t2"),
        FINISHED,
    )
    segments = record(stream).recorder.segments
    step, reasoning = segments[1], segments[2]
    assert step.message_id == "tc-seg-1"
    assert step.calls[0].result_id == "res-1"
    assert reasoning.id == "r9"


def test_tool_step_never_takes_the_id_of_a_text_message() -> None:
    # rc8 parents calls on the open text message; reusing that id would collide with the text.
    stream = events(OPEN("t1"), T("lead", "t1"), C("c1", parent="t1"), R("c1"), FINISHED)
    step = record(stream).recorder.segments[1]
    assert step.message_id != "t1"


def test_tool_only_turn_reuses_the_pre_opened_message_id() -> None:
    # S4/S11: the server pre-opens an empty text message only to parent the calls.
    stream = events(OPEN("pre"), C("c1", parent="pre"), R("c1"), FINISHED)
    assert record(stream).recorder.segments[0].message_id == "pre"


def test_ids_already_in_the_history_are_not_reused() -> None:
    stream = events(C("c1", parent="aihub-0"), R("c1", mid="aihub-1"), FINISHED)
    step = record(stream, input_ids=("aihub-0", "aihub-1")).recorder.segments[0]
    assert step.message_id != "aihub-0"
    assert step.calls[0].result_id != "aihub-1"


# --- what streams when -----------------------------------------------------------------------------


def test_lead_in_streams_before_the_tool_call_starts() -> None:
    drains = record(events(T("Let me check."), C("c1"), R("c1"), T("Done."), FINISHED)).drains
    assert drains[0] == "Let me check."
    assert drains[1:3] == ["", ""]  # call start and args: the block waits for its result


def test_tool_block_streams_with_its_result_and_held_text_follows_it() -> None:
    # S13: "x" arrives while c1 has no result; it must not appear above c1's block.
    drains = record(events(C("c1"), T("x"), R("c1"), FINISHED)).drains
    assert "".join(drains[:4]) == ""
    released = drains[4]
    assert released.index('id="c1"') < released.index("x")
    assert 'done="true"' in released


def test_parallel_calls_stream_once_every_result_is_in() -> None:
    drains = record(events(C("c1"), C("c2"), R("c1"), R("c2"), FINISHED)).drains
    assert "".join(drains[:7]) == ""
    assert drains[7].count("<details") == 2


def test_calls_without_results_are_released_at_run_end_as_not_done() -> None:
    # S16: the summary is held until the run ends, then lands below the calls.
    recording = record(events(T("lead"), C("m1"), C("m2"), T("sum"), FINISHED))
    assert recording.drains[0] == "lead"
    assert "".join(recording.drains[1:-2]) == ""
    tail = recording.drains[-2]
    assert tail.count('done="false"') == 2
    assert tail.index('id="m2"') < tail.index("</details>\nsum")


def test_reasoning_streams_when_the_next_segment_starts_with_its_duration() -> None:
    clock = FakeClock()
    recorder = P.Recorder(clock=clock, new_id=lambda kind: kind)
    recorder.feed(Z("r1", "step one")[1])
    assert recorder.drain() == ""
    clock.now += 3
    recorder.feed({"type": "REASONING_END", "messageId": "r1"})
    assert recorder.drain() == ""  # more reasoning could still join the block
    recorder.feed(T("Answer")[0])
    released = recorder.drain()
    assert released.startswith('<details type="reasoning" done="true" duration="3" id="r1">')
    assert "<summary>Thought for 3 seconds</summary>\n> step one\n</details>\nAnswer" in released


def test_reasoning_split_over_many_ids_is_one_block() -> None:
    # rc8 gives every reasoning delta its own REASONING_START/END and message id.
    stream = events(Z("r1", "The"), Z("r2", " user"), Z("r3", " asks."), T("Hi"), FINISHED)
    segments = record(stream).recorder.segments
    assert shape(segments) == ["rs(r1)", 'A"Hi"']
    assert segments[0].text == "The user asks."


def test_error_keeps_what_streamed_and_closes_pending_calls_as_failed() -> None:
    recording = record(events(T("lead"), C("c1"), ERROR("boom", "RuntimeError")))
    assert shape(recording.recorder.segments) == ['A"lead"', "TC[c1]", "tool(c1)", 'ERR"boom (RuntimeError)"']
    call = recording.recorder.segments[1].calls[0]
    assert (call.failed, call.result) == (True, "Error: the run ended before this tool returned a result.")
    assert recording.streamed.startswith("lead\n<details")
    assert 'status="failed"' in recording.streamed and "Executing..." not in recording.streamed
    assert recording.streamed.endswith("> [!CAUTION]\n> Agent error: boom (RuntimeError)\n")


def test_stream_that_ends_without_run_finished_is_an_error() -> None:
    recorder = record(events(T("partial"))).recorder
    assert shape(recorder.segments) == ['A"partial"', 'ERR"The agent\'s stream ended before the run finished."']


# --- MESSAGES_SNAPSHOT ---------------------------------------------------------------------------


def _rc8_snapshot(lead_id: str) -> list[dict[str, Any]]:
    """The rc8 builder's fixed layout: all calls, all results, the last text; the lead-in dropped."""
    return [
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                {"id": "u1", "role": "user", "content": "q"},
                {
                    "id": "new-tc",
                    "role": "assistant",
                    "toolCalls": [
                        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
                    ],
                },
                {"id": "res-c1", "role": "tool", "toolCallId": "c1", "content": "result of c1"},
                {"id": lead_id, "role": "assistant", "content": "sum"},
            ],
        }
    ]


def test_a_misordered_snapshot_never_reorders_the_stream() -> None:
    stream = events(T("lead"), C("c1"), R("c1"), T("sum", "t2"), _rc8_snapshot("t2"), FINISHED)
    without = record(events(T("lead"), C("c1"), R("c1"), T("sum", "t2"), FINISHED), signer=turn_signer("turn-1"))
    assert record(stream, signer=turn_signer("turn-1")).streamed == without.streamed


def test_a_snapshot_is_used_when_nothing_streamed() -> None:
    recorder = record(events(_rc8_snapshot("t9"), FINISHED), input_ids=("u1",)).recorder
    assert shape(recorder.segments) == ["TC[c1]", "tool(c1)", 'A"sum"']


# --- other things the sheet asks to assert -------------------------------------------------------


def test_argument_chunks_are_joined_and_a_full_replay_is_not_appended() -> None:
    stream = events(
        [{"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "f"}],
        [{"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"a": '}],
        [{"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "1}"}],
        [{"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"a": 1}'}],  # replay (#4194)
        R("c1"),
        FINISHED,
    )
    assert record(stream).recorder.segments[0].calls[0].arguments == '{"a": 1}'


def test_duplicate_starts_and_results_do_not_duplicate_calls() -> None:
    stream = events(C("c1"), C("c1"), R("c1", "first"), R("c1", "second"), FINISHED)
    segments = record(stream).recorder.segments
    assert shape(segments) == ["TC[c1]", "tool(c1)"]
    assert segments[0].calls[0].result == "first"


def test_result_for_an_unknown_call_is_shown_where_it_arrived() -> None:
    segments = record(events(T("a"), R("ghost"), T("b"), FINISHED)).recorder.segments
    assert shape(segments) == ['A"a"', "TC[ghost]", "tool(ghost)", 'A"b"']


def test_chunk_events_are_expanded() -> None:
    stream = [
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "t1", "role": "assistant", "delta": "lead"},
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "c1", "toolCallName": "f", "delta": '{"a"'},
        {"type": "TOOL_CALL_CHUNK", "delta": ": 1}"},
        {"type": "REASONING_MESSAGE_CHUNK", "messageId": "r1", "delta": "hm"},
        *R("c1"),
        *FINISHED,
    ]
    segments = record(stream).recorder.segments
    assert shape(segments) == ['A"lead"', "TC[c1]", "tool(c1)", "rs(r1)"]
    assert segments[1].calls[0].arguments == '{"a": 1}'


def test_text_of_other_roles_is_not_shown() -> None:
    stream = events(OPEN("sys", role="developer"), T("secret instructions", "sys"), T("Hi", "t1"), FINISHED)
    assert shape(record(stream).recorder.segments) == ['A"Hi"']


def test_a_late_repeated_start_does_not_change_a_streamed_block() -> None:
    # Found by hypothesis: the name arrives in a second START after the block already streamed.
    stream = events(
        [{"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": ""}],
        R("c1"),
        [{"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "get"}],
        FINISHED,
    )
    recording = record(stream)
    assert recording.streamed == recording.recorder.render()


# --- what the agent shows beside its answer changes no order ------------------------------------

EXTRAS: list[dict[str, Any]] = [
    {"type": "CUSTOM", "name": "usage", "value": {"input_token_count": 3, "output_token_count": 2}},
    {"type": "CUSTOM", "name": "aihub.source", "value": {"url": "https://example.org/a", "title": "A"}},
    {"type": "STEP_STARTED", "stepName": "research"},
    {"type": "STEP_FINISHED", "stepName": "research"},
    {"type": "CUSTOM", "name": "status", "value": {"state": "in_progress"}},
    {"type": "ACTIVITY_SNAPSHOT", "messageId": "a1", "activityType": "executor", "content": {}},
    {
        "type": "CUSTOM",
        "name": "annotations",
        "value": {
            "messageId": "t1",
            "annotations": [{"type": "citation", "title": "A", "url": "https://example.org/a"}],
        },
    },
    {"type": "CUSTOM", "name": "aihub.image", "value": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_usage_sources_and_steps_between_any_events_change_no_order(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(P, "MAX_IMAGES", 1000)  # an image between every event: more than one answer keeps
    stream, expected = SCENARIOS[name]
    mixed = [item for event in stream for item in (*EXTRAS, event)]
    plain, recording = record(stream, signer=turn_signer("t")), record(mixed, signer=turn_signer("t"))
    assert shape(recording.recorder.segments) == expected
    assert recording.streamed == plain.streamed == recording.recorder.render()
    assert recording.recorder.outbound.take_usage()["total_tokens"] == 5  # the last report: the run so far
    assert [e["data"]["source"]["url"] for e in recording.recorder.outbound.take_events()] == ["https://example.org/a"]
    assert len(recording.recorder.outbound.images) == len(stream)  # kept for the file store, out of the text
