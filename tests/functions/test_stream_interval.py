"""The STREAM_INTERVAL_MS valve: text that arrives within the interval of the last chunk goes out
with what follows, so Open WebUI handles fewer chunks; the first text and the end of a run are
never held, text before a pause at most twice the interval.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

import pytest

from tests.support.pipe_support import FINISHED, SSEStub, T, events, make_pipe, pipe_module, run_pipe

HISTORY = [{"role": "user", "content": "hi"}]


def _pipe(url: str, interval_ms: float) -> Any:
    agent = {"id": "bp.agent", "name": "Agent", "transport": "agui", "url": url}
    return make_pipe([agent], stream_interval_ms=interval_ms)


def _paced(stub: SSEStub, words: int, seconds: float) -> str:
    """``words`` text deltas, one every ``seconds``, then the run's end; returns the whole text."""
    stub.behaviour.data = events(*(T(f"w{i} ") for i in range(words)), FINISHED)
    stub.behaviour.pauses = {i: seconds for i in range(1, words + 1)}
    return "".join(f"w{i} " for i in range(words))


def test_deltas_within_the_interval_go_out_together(sse_stub: SSEStub) -> None:
    text = _paced(sse_stub, 40, 0.01)
    run = run_pipe(_pipe(sse_stub.url, 100), "bp.agent", HISTORY)
    assert run.content == text
    assert run.chunks[0] == "w0 "  # the first text is never held
    assert len(run.chunks) <= 12, run.chunks  # ~0.4 s of text in chunks at least 0.1 s apart


def test_steady_text_is_not_held_longer_than_the_interval(sse_stub: SSEStub) -> None:
    text = _paced(sse_stub, 100, 0.01)  # about a second of text, a delta every 10 ms
    run = run_pipe(_pipe(sse_stub.url, 100), "bp.agent", HISTORY)
    assert run.content == text
    gaps = [later - earlier for earlier, later in zip(run.times, run.times[1:], strict=False)]
    # a chunk about every interval (the first read after it is due), not one every two or at the end
    assert len(run.chunks) >= 6 and statistics.median(gaps) < 0.15, (run.chunks, run.times)


def test_held_text_is_due_one_interval_after_the_last_chunk() -> None:
    batch = pipe_module.Batch(0.1)
    batch.add("first")
    assert batch.ready(0.0)  # the first text is never held
    assert batch.take(5.0) == "first"
    batch.add("a")
    batch.add("b")
    assert batch.holding and not batch.ready(5.09)
    assert batch.ready(5.1) and batch.due == pytest.approx(5.1)
    assert batch.wake_at == pytest.approx(5.2)  # a pause: out after two intervals at most
    assert batch.take(5.1) == "ab" and not batch.holding and not batch.ready(99.0)
    no_wait = pipe_module.Batch(0)
    no_wait.take(7.0)
    no_wait.add("x")
    assert no_wait.ready(7.0)


def test_no_interval_streams_every_delta(sse_stub: SSEStub) -> None:
    text = _paced(sse_stub, 40, 0.01)
    run = run_pipe(_pipe(sse_stub.url, 0), "bp.agent", HISTORY)
    assert run.content == text
    assert len(run.chunks) >= 20, run.chunks  # one per network read (a busy machine may merge a few)


def test_text_held_before_a_pause_goes_out_within_the_interval(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(T("a "), T("b "), T("c "), T("d "), FINISHED)
    sse_stub.behaviour.pauses = {3: 1.5}  # the agent thinks for 1.5 s after "c "
    run = run_pipe(_pipe(sse_stub.url, 200), "bp.agent", HISTORY)  # so "b c " waits at most 0.4 s
    assert run.content == "a b c d "
    sent = list(zip(run.chunks, run.times, strict=True))
    c_sent = next(time for chunk, time in sent if "c " in chunk)
    d_sent = next(time for chunk, time in sent if "d " in chunk)
    assert c_sent < 0.8, (run.chunks, run.times)  # two intervals (0.4 s), not until the agent spoke again
    assert d_sent >= 1.4, (run.chunks, run.times)


def test_the_end_of_a_run_is_never_held(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(T("one "), T("two "), FINISHED)
    run = run_pipe(_pipe(sse_stub.url, 1000), "bp.agent", HISTORY)
    assert run.content == "one two "
    assert run.times[-1] < 0.9, run.times  # the longest interval (1 s) did not delay the last text


def test_held_text_stays_above_the_error_when_the_stream_breaks(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(T("first "), T("second "), T("third "))
    sse_stub.behaviour.drop_after = True
    run = run_pipe(_pipe(sse_stub.url, 1000), "bp.agent", HISTORY)
    assert run.content.startswith("first second third "), run.content
    assert "Agent error" in run.content and "The answer above is incomplete." in run.content
    assert json.dumps(run.chunks).count("third") == 1


def test_text_held_when_the_run_deadline_passes_stays_above_the_timeout_alert(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(T("first "), T("second "))
    sse_stub.behaviour.hang_after = True  # then nothing, until the run's deadline
    agent = {"id": "bp.agent", "name": "Agent", "transport": "agui", "url": sse_stub.url}
    run = run_pipe(make_pipe([agent], timeout=0.5, stream_interval_ms=1000), "bp.agent", HISTORY)
    assert run.content.startswith("first second "), run.content
    assert "did not finish within 0.5 seconds" in run.content


def test_interval_valve_bounds() -> None:
    for bad in (-1, 1001, float("inf"), float("nan")):
        with pytest.raises(ValueError):
            pipe_module.Pipe.Valves(STREAM_INTERVAL_MS=bad)
    for bad in (0, -5, float("inf")):
        with pytest.raises(ValueError):
            pipe_module.Pipe.Valves(TIMEOUT_SECONDS=bad)
