"""AgentStream: the events in an agent's response body, however the body is cut into reads."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.pipe_support import pipe_module as P

EVENTS = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "héllo "},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "wörld"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]


def _body(newline: str) -> bytes:
    """The events as SSE with every form the parser must take: comments, an ``event:`` field,
    ``data:`` with and without its space, and one event's data over two lines."""
    nl = newline
    one, two, three, four = (json.dumps(e, ensure_ascii=False) for e in EVENTS)
    half = three.index(", ") + 1  # after a comma: the "\n" that joins the two lines is JSON whitespace
    return (
        f": keep-alive{nl}{nl}"
        f"data: {one}{nl}{nl}"
        f"event: message{nl}data:{two}{nl}{nl}"
        f"data: {three[:half]}{nl}data:{three[half:]}{nl}{nl}"
        f"data: {four}{nl}{nl}"
    ).encode()


def _read(body: bytes, size: int, transport: str = "agui") -> list[dict[str, Any]]:
    stream = P.AgentStream(transport)
    events = [e for start in range(0, len(body), size) for e in stream.feed(body[start : start + size])]
    return events + list(stream.end())


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_every_cut_of_the_body_gives_the_same_events(newline: str) -> None:
    body = _body(newline)
    expected = list(EVENTS)
    for size in range(1, len(body) + 1):  # cuts lines, CRLF pairs and UTF-8 sequences apart
        got = _read(body, size)
        assert got == expected, (size, got)


def test_a_last_event_without_its_blank_line_still_counts() -> None:
    body = f"data: {json.dumps(EVENTS[0])}\n\ndata: {json.dumps(EVENTS[3])}".encode()
    assert _read(body, len(body)) == [EVENTS[0], EVENTS[3]]


def test_openai_chunks_become_events_and_done_ends_the_run() -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "hi"}}]}
    body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\ndata: {json.dumps(chunk)}\n\n".encode()
    assert _read(body, 7, "openai") == [{"type": "TEXT_MESSAGE_CONTENT", "delta": "hi"}, {"type": "RUN_FINISHED"}]


def test_an_openai_stream_that_ends_without_done_finishes_on_its_finish_reason() -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}
    body = f"data: {json.dumps(chunk)}\n\n".encode()
    assert _read(body, len(body), "openai")[-1] == {"type": "RUN_FINISHED"}
