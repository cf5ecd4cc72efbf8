"""Issue 29, point 2: one long SSE line stalled Open WebUI's event loop, at a cost that grew with
the square of its length. A line or an event of the agent's stream is bounded (the MAX_EVENT_MB
valve), the scan is linear, and a stream past the bound ends the run with a clear error.
bench/sse_long_line.py measures it (bench/README.md)."""

from __future__ import annotations

import json
import time

import pytest

from tests.support.pipe_support import SSEStub, T, make_pipe, pipe_module, run_pipe

P = pipe_module
HISTORY = [{"role": "user", "content": "q"}]


def _agui(url: str) -> dict[str, str]:
    return {"id": "lab.helper", "name": "Helper", "transport": "agui", "url": url}


def test_a_line_past_the_bound_ends_the_stream_before_its_end_arrives() -> None:
    stream = P.AgentStream("agui", max_event=1000)
    assert list(stream.feed(b"data: " + b"a" * 900)) == []
    with pytest.raises(P.EventTooLarge):
        list(stream.feed(b"a" * 200))  # no newline yet: the bound holds for the unfinished line


def test_an_event_of_many_short_data_lines_past_the_bound_ends_the_stream() -> None:
    stream = P.AgentStream("agui", max_event=1000)
    with pytest.raises(P.EventTooLarge):
        list(stream.feed(b"".join(b"data: " + b"a" * 90 + b"\n" for _ in range(20))))


def test_events_under_the_bound_pass_however_the_body_is_cut() -> None:
    event = {"type": "CUSTOM", "name": "n", "value": "v" * 900}
    body = f"data: {json.dumps(event)}\n\n".encode() * 3
    for size in (1, 7, 64, len(body)):
        stream = P.AgentStream("agui", max_event=1000)
        got = [e for start in range(0, len(body), size) for e in stream.feed(body[start : start + size])]
        assert got == [event] * 3, size


def test_feeding_a_long_unfinished_line_costs_each_read_alone() -> None:
    """Linear: a read's cost must not grow with the unfinished line before it (the pipe joined and
    searched the whole line again on every read: 40 MB took 3.5-5.6 s and stalled the loop 31-38
    times over 50 ms, bench/sse_long_line.py)."""
    piece = b"a" * 1024

    def cost(pending: int) -> float:
        stream = P.AgentStream("agui", max_event=64 * P.MB)
        list(stream.feed(b"data: " + b"a" * pending))
        start = time.perf_counter()
        for _ in range(300):
            list(stream.feed(piece))
        return time.perf_counter() - start

    short, long = min(cost(1024) for _ in range(3)), min(cost(16 * P.MB) for _ in range(3))
    assert long < 20 * short + 0.02, (short, long)


def test_a_stream_past_the_bound_ends_the_run_with_a_clear_error(sse_stub: SSEStub) -> None:
    line = json.dumps({"type": "CUSTOM", "name": "noise", "value": "a" * (2 * P.MB)})
    sse_stub.behaviour.raw = b"data: " + json.dumps(T("Hi.")[0]).encode() + b"\n\ndata: " + line.encode() + b"\n\n"
    sse_stub.behaviour.fragment = 65536
    pipe = make_pipe([_agui(sse_stub.url)])
    pipe.valves.MAX_EVENT_MB = 1
    run = run_pipe(pipe, "lab.helper", HISTORY)
    assert run.content.startswith("Hi.")
    assert "The agent sent an event of more than 1 MB" in run.content
    assert "The answer above is incomplete." in run.content


def test_the_event_bound_leaves_room_for_the_largest_image() -> None:
    valves = P.Pipe.Valves()
    assert valves.MAX_EVENT_MB * 3 / 4 > valves.MAX_IMAGE_MB  # an image's base64 fits one event
