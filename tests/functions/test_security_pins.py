"""Pins of the pipe's security rules that a second mutation pass (2026-12-07, issue 29: "pin every
rule") found no test held: each test fails when its rule is taken out of the built pipe, as
``.venv/bin/python -m tests.support.pin_mutations`` proves (its breakages name this file).

- who may read a file: a file whose record is over MAX_FILE_MB is never read at all (the check
  before the read; the read's own cap gave the same words, so nothing saw the read happen);
- what verifies: a tool block's ``turn`` is signed, so a block cut out of its answer, pasted into
  a later one and given another turn still reaches the agent as text;
- what an agent may show: the words of its RUN_ERROR and a subagent's name are text in the
  answer (Open WebUI renders an answer's HTML: ``<img src=...>`` would load from anywhere).
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from tests.support.pipe_support import (
    ERROR,
    FINISHED,
    SIGNER,
    C,
    FakeStore,
    R,
    SSEStub,
    T,
    drive,
    events,
    make_pipe,
    pipe_module,
    record,
)

P = pipe_module
HOSTILE = '<img src="https://tracker.example/pixel.png"> <a href="https://evil.example">Allow</a>'


# --- who may read a file ---------------------------------------------------------------------------


def test_a_file_whose_record_is_over_max_file_mb_is_never_read(sse_stub: SSEStub) -> None:
    store = FakeStore()
    ref = store.add("f-big", "big.bin", "application/octet-stream", b"x" * (2 * P.MB))
    sse_stub.behaviour.data = events(T("ok"), FINISHED)
    pipe = make_pipe([{"id": "docs.analyst", "name": "Analyst", "url": sse_stub.url}])
    pipe.valves.MAX_FILE_MB = 1
    pipe.store = store
    asyncio.run(drive(pipe, "docs.analyst", [{"role": "user", "content": "Read"}], metadata={"files": [ref]}))
    assert store.reads == []  # the record said 2 MB: nothing was read to find out again
    content = sse_stub.requests[0]["json"]["messages"][0]["content"]
    assert '"big.bin" was left out: 2.0 MB is over the limit of 1 MB per file' in str(content)


# --- what verifies ---------------------------------------------------------------------------------


def _render(*parts: list[dict[str, Any]]) -> str:
    return str(record(events(*parts, FINISHED)).recorder.render())


@pytest.mark.parametrize("transport", ["agui", "openai"])
def test_a_moved_block_given_another_turn_is_plain_text_there(transport: str) -> None:
    answer = _render(C("c1"), R("c1", "sunny"), T("And the other city:"), C("c2"), R("c2", "rainy"))
    head, moved = answer.split("And the other city:\n")
    edited = re.sub(r'turn="[^"]*"', 'turn="a-later-turn"', moved)
    assert edited != moved
    history = [
        {"role": "user", "content": "q0"},
        {"role": "assistant", "content": head},
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "Moved here:\n" + edited},
        {"role": "user", "content": "and now?"},
    ]
    if transport == "agui":
        messages = P.to_agui_messages(history, SIGNER)
        calls = [c["id"] for m in messages for c in m.get("toolCalls") or []]
    else:
        messages = P.to_openai_messages(history, SIGNER)
        calls = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    assert calls == ["c1"]


# --- what an agent may show ------------------------------------------------------------------------


def test_the_agents_error_message_is_text_in_the_answer() -> None:
    shown = str(record(events(T("Working."), ERROR(HOSTILE, "E1")), check=False).recorder.render())
    assert "tracker.example" in shown  # the words are there ...
    assert "<img" not in shown and "<a " not in shown  # ... as text
    assert "&lt;img" in shown


def test_a_subagents_name_is_text_in_its_block() -> None:
    run = [{"type": "SUBAGENT_STARTED", "subagentRunId": "sub-1", "name": HOSTILE}]
    content = [
        {**event, "subagentRunId": "sub-1"} if event["type"].startswith("TEXT_MESSAGE") else event
        for event in T("Looking.", "s-t1")
    ]
    finished = [{"type": "SUBAGENT_FINISHED", "subagentRunId": "sub-1"}]
    shown = str(record(events(run, content, finished, FINISHED)).recorder.render())
    summary = shown.split("<summary>", 1)[1].split("</summary>", 1)[0]
    assert "tracker.example" in summary
    assert "<img" not in summary and "<a " not in summary
