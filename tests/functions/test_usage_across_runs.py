"""A turn's usage is the sum of its runs' (issue 32, item 1: usage wherever the framework reports
it). A run resumed after the user answered is a new run that reports only what it cost: LangGraph's
and Strands' RUN_FINISHED.usage, Agno's RAW usage events. Before, the resumed run's usage replaced
the first run's, and the first model call of an approved turn was never counted."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.support.pipe_support import FINISHED, SSEStub, T, events, make_pipe, pipe_module, run_pipe

P = pipe_module
CAPTURES = Path(__file__).resolve().parents[1] / "data" / "agui_captures"


class Approve:
    """Open WebUI's __event_call__: approves, and the server then streams the resumed run."""

    def __init__(self, stub: SSEStub, then: bytes) -> None:
        self.stub, self.then, self.asked = stub, then, 0

    async def __call__(self, question: dict[str, Any]) -> Any:
        self.asked += 1
        self.stub.behaviour.raw, self.stub.behaviour.data = self.then, []
        await asyncio.sleep(0)
        return True


@pytest.mark.parametrize("framework", ["langgraph", "strands", "agno"])
def test_an_approved_turn_counts_the_usage_of_both_runs(sse_stub: SSEStub, framework: str) -> None:
    # each capture's run reports its own model call: 20 + 8 tokens, then 40 + 6 after the approval
    sse_stub.behaviour.raw = (CAPTURES / framework / "approve.sse").read_bytes()
    dialog = Approve(sse_stub, (CAPTURES / framework / "approve.resume-approved.sse").read_bytes())
    agent = {"id": "lab.helper", "name": "Helper", "transport": "agui", "url": sse_stub.url}
    run = run_pipe(make_pipe([agent]), "lab.helper", [{"role": "user", "content": "q"}], event_call=dialog)
    assert dialog.asked == 1 and len(sse_stub.requests) == 2
    (usage,) = [d["usage"] for d in run.data if "usage" in d]
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (60, 14, 74)


def test_within_a_run_a_later_report_still_replaces_the_one_before() -> None:
    """Agent Framework 1.7.0 reports the run's usage so far after each model call."""
    outbound = P.Outbound(P.Scrubber())
    outbound.usage_report({"input_token_count": 20, "output_token_count": 8})
    outbound.usage_report({"input_token_count": 60, "output_token_count": 14})
    outbound.run_ended()
    usage = outbound.take_usage()
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (60, 14)
    assert outbound.take_usage() is None  # once per turn: Open WebUI adds up every usage chunk


def test_a_run_without_usage_adds_nothing(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(T("Hi."), FINISHED)
    agent = {"id": "lab.helper", "name": "Helper", "transport": "agui", "url": sse_stub.url}
    run = run_pipe(make_pipe([agent]), "lab.helper", [{"role": "user", "content": "q"}])
    assert [d for d in run.data if "usage" in d] == []
