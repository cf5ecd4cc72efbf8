"""Rendering matches what Open WebUI 0.12.4 reads, and parsing stored content is its exact inverse."""

from __future__ import annotations

import html
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.pipe_support import FINISHED, SIGNER, C, R, T, events, pipe_module, record

P = pipe_module

# The frontend's own patterns (src/lib/utils/marked/extension.ts, 0.12.4): a details block must
# open at a line start and end its opening tag with ">\n"; attributes are (\w+)="(.*?)" on one
# line; values are HTML-decoded by ToolCallDisplay.
FRONTEND_DETAILS = re.compile(r"^<details(\s+[^>]*)?>\n")
FRONTEND_ATTRS = re.compile(r'(\w+)="(.*?)"')


def _frontend_attributes(block: str) -> dict[str, str]:
    match = FRONTEND_DETAILS.match(block)
    assert match, block[:80]
    return {k: html.unescape(v) for k, v in FRONTEND_ATTRS.findall(match.group(0))}


def test_tool_block_reads_back_through_the_frontend_patterns() -> None:
    call = P.ToolCall(
        id="call_1",
        name="search",
        arguments='{"q": "a \\"b\\" <c>\\nd"}',
        result='line 1\nline "2" & <3>',
        result_id="r1",
    )
    block = P.render_tool_call(call, "msg-1")
    assert _frontend_attributes(block) == {
        "type": "tool_calls",
        "done": "true",
        "id": "call_1",
        "name": "search",
        "arguments": call.arguments,
        "result": call.result,
        "message_id": "msg-1",
        "result_id": "r1",
    }
    assert block.endswith("\n<summary>Tool Executed</summary>\n</details>\n")
    assert block.count("\n") == 3  # no raw newline leaks out of an attribute


def test_call_without_result_renders_as_not_done_without_result_attribute() -> None:
    attrs = _frontend_attributes(P.render_tool_call(P.ToolCall(id="c", name="confirm"), "m"))
    assert attrs["done"] == "false"
    assert "result" not in attrs


def test_reasoning_block_is_open_webuis_shape() -> None:
    block = P.render_reasoning(P.Reasoning(id="r1", text="first\n> quoted <b>", duration=4))
    assert block == (
        '<details type="reasoning" done="true" duration="4" id="r1">\n'
        "<summary>Thought for 4 seconds</summary>\n"
        "> first\n"
        "> &gt; quoted &lt;b&gt;\n"
        "</details>\n"
    )


def test_block_after_text_starts_on_its_own_line() -> None:
    content = record(events(T("Let me check:"), C("c1"), R("c1"), T("Done."), FINISHED)).recorder.render()
    assert "Let me check:\n<details " in content
    assert "</details>\nDone." in content


def test_legacy_open_webui_blocks_in_a_row_are_one_step() -> None:
    # Open WebUI 0.6 wrote JSON-encoded results and no message_id; its parallel calls sat in a row.
    legacy = (
        "Looking.\n"
        '<details type="tool_calls" done="true" id="a" name="f" arguments="&quot;{}&quot;" '
        'result="&quot;1&quot;" files="" embeds="">\n'
        "<summary>Tool Executed</summary>\n</details>\n"
        '<details type="tool_calls" done="true" id="b" name="g" arguments="&quot;{}&quot;" '
        'result="&quot;2&quot;" files="" embeds="">\n'
        "<summary>Tool Executed</summary>\n</details>\n"
        "Both done."
    )
    segments = P.parse_content(legacy, "p")
    assert [type(s).__name__ for s in segments] == ["Text", "ToolStep", "Text"]
    assert [c.id for c in segments[1].calls] == ["a", "b"]
    assert segments[1].calls[0].result == '"1"'


def test_adjacent_steps_with_different_ids_stay_apart() -> None:
    content = record(events(C("c1"), R("c1"), C("c2"), R("c2"), FINISHED)).recorder.render()
    assert [len(s.calls) for s in P.parse_content(content)] == [1, 1]


def test_plain_text_is_one_text_segment() -> None:
    assert P.parse_content("Just an answer with <b>html</b> and > quotes") == [
        P.Text("Just an answer with <b>html</b> and > quotes")
    ]


# --- properties over arbitrary event streams ---------------------------------------------------------

_text = st.text(alphabet="ab \n<>&\"'#*`", min_size=0, max_size=6)
_call_ids = st.sampled_from(["c1", "c2", "c3", "c4"])


@st.composite
def _event(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["text", "text", "call", "args", "result", "reasoning", "reasoning_end"]))
    if kind == "text":
        return {"type": "TEXT_MESSAGE_CONTENT", "messageId": draw(st.sampled_from(["t1", "t2"])), "delta": draw(_text)}
    if kind == "call":
        return {
            "type": "TOOL_CALL_START",
            "toolCallId": draw(_call_ids),
            "toolCallName": draw(st.sampled_from(["get", "put", ""])),
            "parentMessageId": draw(st.sampled_from(["p1", "p2", "t1", None])),
        }
    if kind == "args":
        return {"type": "TOOL_CALL_ARGS", "toolCallId": draw(_call_ids), "delta": draw(_text)}
    if kind == "result":
        return {
            "type": "TOOL_CALL_RESULT",
            "toolCallId": draw(_call_ids),
            "messageId": draw(st.sampled_from(["x1", "x2"])),
            "content": draw(_text),
        }
    if kind == "reasoning":
        return {
            "type": "REASONING_MESSAGE_CONTENT",
            "messageId": draw(st.sampled_from(["r1", "r2"])),
            "delta": draw(_text),
        }
    return {"type": "REASONING_END", "messageId": "r1"}


_ends = st.sampled_from([FINISHED, [{"type": "RUN_ERROR", "message": "bad\nthing <x>", "code": "E"}], []])
_streams = st.tuples(st.lists(_event(), max_size=25), _ends).map(lambda t: t[0] + t[1])


@settings(max_examples=400, deadline=None)
@given(_streams)
def test_what_streams_is_exactly_the_final_rendering(stream: list[dict[str, Any]]) -> None:
    recording = record(stream)
    assert recording.streamed == recording.recorder.render()


@settings(max_examples=400, deadline=None)
@given(_streams)
def test_parse_is_the_inverse_of_render(stream: list[dict[str, Any]]) -> None:
    recorder = record(stream).recorder
    assert P.parse_content(recorder.render()) == recorder.segments


@settings(max_examples=200, deadline=None)
@given(_streams)
def test_every_call_is_rendered_once_and_replayed_ids_are_unique(stream: list[dict[str, Any]]) -> None:
    recorder = record(stream).recorder
    content = recorder.render()
    for call_id in {e["toolCallId"] for e in stream if e["type"] in ("TOOL_CALL_START", "TOOL_CALL_RESULT")}:
        assert content.count(f' id="{call_id}"') == 1
    messages = P.to_agui_messages([{"role": "user", "content": "q"}, {"role": "assistant", "content": content}], SIGNER)
    ids = [m["id"] for m in messages]
    assert len(ids) == len(set(ids))
