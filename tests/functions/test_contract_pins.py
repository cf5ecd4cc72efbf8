"""Pins of the agent contract that a mutation audit (issue 29) found no fast test held: each test
below fails when its rule is taken out of the pipe.

How that is proven: ``.venv/bin/python -m tests.support.pin_mutations`` applies each breakage alone
to the built pipe, runs this file and restores the pipe. Run on 2026-12-04 (harden-pipe), each
breakage failed the test named:

- stored_chat without its ``chat.user_id != user_id`` check:
  test_the_stored_chat_of_another_user_is_none
- read_files taking ``reads: []`` as "not declared" (``if not reads``):
  test_an_agent_that_reads_nothing_gets_no_file_at_all
- place_files matching the stored user messages from the oldest (``zip(users, stored)``):
  test_a_stored_chat_longer_than_the_history_still_puts_each_file_on_its_own_message
- traceparent forcing the span's flags to ``01``: test_an_unsampled_span_stays_unsampled
- Outbound.image without the ``+ 3`` of its base64 size check: test_an_image_of_exactly_max_image_mb_is_stored
- ask_checked approving on ``bool(answer)`` (resume_entry held the rule until issue 32's questions
  moved it there: the runner follows the rule's text): the four cases of
  test_an_approval_answered_with_a_truthy_non_true_value_does_not_approve

The same script breaks 21 more security rules of the pipe (who may read a file, what verifies,
what an agent may show, what is refused), each pinned here or in the file it names. Two had no
pin: safe_url without its scheme check (now test_a_link_that_is_not_http_is_never_shown, here)
and a fixed three-backtick fence in the approval dialog (now
tests/functions/test_approval_dialog.py::test_arguments_with_a_fence_of_their_own_cannot_close_the_block).
"""

from __future__ import annotations

import asyncio
import base64
import sys
import types
from typing import Any

import pytest

from tests.support.pipe_support import (
    FINISHED,
    C,
    FakeStore,
    SSEStub,
    T,
    drive,
    events,
    make_pipe,
    pipe_module,
    run_pipe,
)

P = pipe_module
PDF = b"%PDF-1.4 numbers"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


def _agui(url: str, **extra: Any) -> dict[str, Any]:
    return {"id": "lab.helper", "name": "Helper", "transport": "agui", "url": url, **extra}


# --- who may read a file: the stored chat is the user's own ---------------------------------------------


@pytest.fixture
def chats(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Open WebUI 0.12's Chats model, faked in sys.modules: chat id -> chat record."""
    records: dict[str, Any] = {}

    class Chats:
        @staticmethod
        async def get_chat_by_id(chat_id: str) -> Any:
            return records.get(chat_id)

    module: Any = types.ModuleType("open_webui.models.chats")  # a module, with Chats set here
    module.Chats = Chats
    for name in ("open_webui", "open_webui.models"):
        monkeypatch.setitem(sys.modules, name, sys.modules.get(name) or types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "open_webui.models.chats", module)
    return records


def _chat(owner: str) -> Any:
    messages = {"u1": {"id": "u1", "role": "user", "parentId": None, "files": [{"type": "file", "id": "f-1"}]}}
    return types.SimpleNamespace(user_id=owner, chat={"history": {"messages": messages}})


def test_the_stored_chat_of_another_user_is_none(chats: dict[str, Any]) -> None:
    chats["chat-a"] = _chat(owner="user-2")
    store = P.OpenWebUIStore()
    assert asyncio.run(store.stored_chat("chat-a", "user-1", "u1")) is None
    assert asyncio.run(store.stored_chat("chat-a", "user-2", "u1")).files() == [[{"type": "file", "id": "f-1"}]]


# --- reads: [] --------------------------------------------------------------------------------------------


def test_an_agent_that_reads_nothing_gets_no_file_at_all(sse_stub: SSEStub) -> None:
    store = FakeStore()
    refs = [store.add("f-pdf", "q3.pdf", "application/pdf", PDF), store.add("f-png", "c.png", "image/png", PNG)]
    sse_stub.behaviour.data = events(T("ok"), FINISHED)
    pipe = make_pipe([_agui(sse_stub.url, reads=[])])
    pipe.store = store
    asyncio.run(drive(pipe, "lab.helper", [{"role": "user", "content": "Read"}], metadata={"files": refs}))
    content = sse_stub.requests[0]["json"]["messages"][0]["content"]
    assert isinstance(content, str) and store.reads == []  # text alone: no document, no image part
    assert content.split("\n")[1:] == [
        '[The attached file "q3.pdf" was left out: this agent does not read documents.]',
        '[The attached file "c.png" was left out: this agent does not read images.]',
    ]


# --- a stored chat with more user messages than the history ---------------------------------------------


def test_a_stored_chat_longer_than_the_history_still_puts_each_file_on_its_own_message(sse_stub: SSEStub) -> None:
    # Open WebUI may hand the pipe fewer messages than the chat holds (a cut history): the stored
    # chat's user messages are matched to the history's from the newest.
    store = FakeStore()
    old, mid, new = (store.add(f"f-{n}", f"{n}.txt", "text/plain", n.encode()) for n in ("old", "mid", "new"))
    store.stored = [[old], [mid], [new]]
    history = [
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "three"},
    ]
    sse_stub.behaviour.data = events(T("ok"), FINISHED)
    pipe = make_pipe([_agui(sse_stub.url)])
    pipe.store = store
    asyncio.run(drive(pipe, "lab.helper", history, metadata={"files": [old, mid, new]}))
    first, _, last = sse_stub.requests[0]["json"]["messages"]
    assert [p["metadata"]["file_id"] for p in first["content"] if p["type"] == "document"] == ["f-mid"]
    assert [p["metadata"]["file_id"] for p in last["content"] if p["type"] == "document"][0] == "f-new"


# --- the trace ----------------------------------------------------------------------------------------------


def test_an_unsampled_span_stays_unsampled(monkeypatch: pytest.MonkeyPatch) -> None:
    context = types.SimpleNamespace(
        is_valid=True, trace_id=0x4BF92F3577B34DA6A3CE929D0E0E4736, span_id=0x00F067AA0BA902B7, trace_flags=0
    )
    fake: Any = types.ModuleType("opentelemetry.trace")  # a module, with the function set here
    fake.get_current_span = lambda: types.SimpleNamespace(get_span_context=lambda: context)
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", fake)
    assert P.traceparent() == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"


# --- what an agent may show: an image at the limit ------------------------------------------------------------


def test_an_image_of_exactly_max_image_mb_is_stored(sse_stub: SSEStub, monkeypatch: pytest.MonkeyPatch) -> None:
    stored: list[Any] = []

    async def store(images: Any, request: Any, user: Any, metadata: Any) -> list[str]:
        stored.extend(images)
        return [f"/api/v1/files/f{n}/content" for n in range(len(images))]

    monkeypatch.setattr(P, "store_images", store)
    limit = 262_144  # 0.25 MB: 3 * 87381 + 1 bytes, so its base64 holds two padding characters
    image = b"\x89PNG" + b"\0" * (limit - 4)
    sse_stub.behaviour.data = events(
        T("x"),
        [
            {
                "type": "CUSTOM",
                "name": "aihub.image",
                "value": {"mimeType": "image/png", "data": base64.b64encode(image).decode()},
            }
        ],
        FINISHED,
    )
    pipe = make_pipe([_agui(sse_stub.url)])
    pipe.valves.MAX_IMAGE_MB = 0.25
    run = run_pipe(pipe, "lab.helper", [{"role": "user", "content": "q"}])
    assert stored == [("image/png", image)] and "not shown" not in run.content


# --- an approval answered with something truthy that is not True ----------------------------------------------


@pytest.mark.parametrize("answer", ["no", {"confirmed": False}, 1, ["yes"]])
def test_an_approval_answered_with_a_truthy_non_true_value_does_not_approve(sse_stub: SSEStub, answer: Any) -> None:
    approval = {"id": "a1", "reason": "tool_call", "toolCallId": "c1", "message": "Approve?"}
    sse_stub.behaviour.data = events(
        C("c1", "deploy", "{}"), [{**FINISHED[0], "outcome": {"type": "interrupt", "interrupts": [approval]}}]
    )

    async def event_call(question: dict[str, Any]) -> Any:
        sse_stub.behaviour.data = events(T("ok"), FINISHED)
        return answer

    run = run_pipe(
        make_pipe([_agui(sse_stub.url)]), "lab.helper", [{"role": "user", "content": "q"}], event_call=event_call
    )
    assert sse_stub.requests[1]["json"]["resume"][0]["payload"] == {"approved": False}
    assert "approved by the user" not in run.content


# --- what an agent may show: only http(s) links ----------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "javascript://example.org/%0aalert(1)",
        "file://server/etc/passwd",
        "ftp://example.org/x.png",
        "data://example.org/x",
    ],
)
def test_a_link_that_is_not_http_is_never_shown(sse_stub: SSEStub, url: str) -> None:
    assert P.safe_url(url) == ""
    sse_stub.behaviour.data = events(
        T("x"),
        [
            {"type": "CUSTOM", "name": "aihub.source", "value": {"url": url, "title": "t"}},
            {"type": "CUSTOM", "name": "aihub.image", "value": {"url": url}},
        ],
        FINISHED,
    )
    run = run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", [{"role": "user", "content": "q"}])
    assert url not in str(run.events)
    assert [e["data"]["source"] for e in run.events if e["type"] == "source"] == [{"name": "t"}]
