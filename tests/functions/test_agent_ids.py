"""Earlier answers go back under the agent's own message ids (agent_pipe/agent_ids.py).

ag-ui-langgraph merges the history it receives into its checkpointed thread by message id: an
answer sent back under the pipe's ids is added a second time and the model reads it twice
(tests/functions/test_framework_matrix.py, "later turns", drives the real server). The ids go
into the answer's last status, which Open WebUI stores with the message, and come back from the
stored chat next turn.
"""

from __future__ import annotations

import asyncio
import json
import sys
import types
from typing import Any

import pytest

from tests.support.pipe_support import (
    AGENT,
    FINISHED,
    OPEN,
    SIGNER,
    C,
    FakeStore,
    R,
    T,
    agui_shape,
    drive,
    events,
    make_pipe,
    pipe_module,
    record,
)

P = pipe_module
KEY = P.AGENT_MESSAGES_KEY

# ag-ui-langgraph's shape: the text and the call share the model message's id; the result streams
# under the call's id, and the closing snapshot names the tool message the checkpoint keeps.
LANGGRAPH_TURN = events(
    OPEN("lc_run--a"),
    T("Let me look up order 10023.", "lc_run--a"),
    C("call_1", "lookup_order", '{"order": "10023"}', parent="lc_run--a"),
    R("call_1", "order 10023 shipped", mid="call_1"),
    OPEN("lc_run--b"),
    T("Order 10023 has shipped.", "lc_run--b"),
    [
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                {"id": "aihub-0", "role": "user", "content": "scenario:tool"},
                {
                    "id": "lc_run--a",
                    "role": "assistant",
                    "content": "Let me look up order 10023.",
                    "toolCalls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "lookup_order", "arguments": '{"order": "10023"}'},
                        }
                    ],
                },
                {"id": "tool-uuid-1", "role": "tool", "toolCallId": "call_1", "content": "order 10023 shipped"},
                {"id": "lc_run--b", "role": "assistant", "content": "Order 10023 has shipped."},
            ],
        }
    ],
    FINISHED,
)


def _answer(stream: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """(the rendered answer, the agent's ids its last status holds)."""
    recorder = record(stream, input_ids=("aihub-0",)).recorder
    (last,) = [s for s in recorder.statuses if s["description"] == "Done"]
    return recorder.render(), last.get(KEY, [])


def test_the_last_status_holds_the_ids_the_server_keeps() -> None:
    _, entries = _answer(LANGGRAPH_TURN)
    assert [(e["id"], e.get("calls"), e.get("result")) for e in entries] == [
        ("lc_run--a", ["call_1"], None),
        ("tool-uuid-1", None, "call_1"),  # the snapshot's id, not the one the result streamed under
        ("lc_run--b", None, None),
    ]
    assert entries[0]["text"] == P.text_digest("Let me look up order 10023.")


def test_without_a_snapshot_the_ids_come_from_the_stream() -> None:
    _, entries = _answer(
        events(T("Hi", "m1"), C("c1", parent="m1"), R("c1", "sunny", mid="r1"), T("Done.", "m2"), FINISHED)
    )
    assert [(e["id"], e.get("calls"), e.get("result")) for e in entries] == [
        ("m1", ["c1"], None),
        ("m2", None, None),
        ("r1", None, "c1"),
    ]


def test_the_next_turn_sends_the_answer_back_under_the_servers_ids_as_the_server_keeps_it() -> None:
    content, entries = _answer(LANGGRAPH_TURN)
    history = [
        {"role": "user", "content": "scenario:tool"},
        {"role": "assistant", "content": content},
        {"role": "user", "content": "again"},
    ]
    messages = P.to_agui_messages(history, SIGNER, [entries])
    assert [(m["id"], m["role"], m.get("content"), [c["id"] for c in m.get("toolCalls", [])]) for m in messages] == [
        ("aihub-0", "user", "scenario:tool", []),
        ("lc_run--a", "assistant", "Let me look up order 10023.", ["call_1"]),  # one message, as the server has it
        ("tool-uuid-1", "tool", "order 10023 shipped", []),
        ("lc_run--b", "assistant", "Order 10023 has shipped.", []),
        ("aihub-2", "user", "again", []),
    ]


def test_without_stored_ids_the_history_is_as_before() -> None:
    content, _ = _answer(LANGGRAPH_TURN)
    history = [{"role": "user", "content": "scenario:tool"}, {"role": "assistant", "content": content}]
    messages = P.to_agui_messages(history, SIGNER)
    assert agui_shape(messages) == [
        'user"scenario:tool"',
        'A"Let me look up order 10023."',
        "TC[call_1]",
        "tool(call_1)",
        'A"Order 10023 has shipped."',
    ]
    assert "lc_run--b" not in [m["id"] for m in messages]


def test_an_edited_text_goes_back_under_the_pipes_id_and_apart_from_the_calls() -> None:
    content, entries = _answer(LANGGRAPH_TURN)
    edited = content.replace("Let me look up order 10023.", "Let me look up order 99999.")
    history = [{"role": "user", "content": "scenario:tool"}, {"role": "assistant", "content": edited}]
    messages = P.to_agui_messages(history, SIGNER, [entries])
    assert agui_shape(messages)[1:3] == ['A"Let me look up order 99999."', "TC[call_1]"]
    assert messages[1]["id"] == "aihub-1-0"  # the server's id would make the server keep its own text
    assert messages[2]["id"] != "lc_run--a"


def test_stored_ids_are_matched_to_the_answers_from_the_newest() -> None:
    first, first_ids = _answer(events(T("Hello.", "m1"), FINISHED))
    second, second_ids = _answer(events(T("Hello.", "m2"), FINISHED))  # the same words, another message
    history = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": first},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": second},
        {"role": "user", "content": "c"},
    ]
    ids = [m["id"] for m in P.to_agui_messages(history, SIGNER, [first_ids, second_ids])]
    assert ids == ["aihub-0", "m1", "aihub-2", "m2", "aihub-4"]
    # a chat compacted or cut at its start: what is known is the newest answers'
    ids = [m["id"] for m in P.to_agui_messages(history, SIGNER, [second_ids])]
    assert ids == ["aihub-0", "aihub-1-0", "aihub-2", "m2", "aihub-4"]


def test_ids_in_the_stored_status_are_masked_like_the_answer() -> None:
    secret = "sk-live-0123456789abcdef0123"
    recorder = record(events(T("Hi", f"m-{secret}"), FINISHED), secrets=(secret,)).recorder
    assert secret not in str(recorder.statuses)


# --- the stored chat ------------------------------------------------------------------------------------


@pytest.fixture
def chats(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Open WebUI 0.12's Chats model, faked in sys.modules: chat id -> chat record."""
    records: dict[str, Any] = {}

    class Chats:
        @staticmethod
        async def get_chat_by_id(chat_id: str) -> Any:
            return records.get(chat_id)

    module: Any = types.ModuleType("open_webui.models.chats")
    module.Chats = Chats
    for name in ("open_webui", "open_webui.models"):
        monkeypatch.setitem(sys.modules, name, sys.modules.get(name) or types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "open_webui.models.chats", module)
    return records


def _stored_chat(owner: str) -> Any:
    done = {"description": "Done", "done": True, "hidden": True, KEY: [{"id": "m1", "text": "x"}]}
    messages = {
        "u1": {"id": "u1", "role": "user", "parentId": None, "content": "a"},
        "a1": {"id": "a1", "role": "assistant", "parentId": "u1", "content": "Hello.", "statusHistory": [done]},
        "a1b": {"id": "a1b", "role": "assistant", "parentId": "u1", "content": "Other branch."},
        "u2": {"id": "u2", "role": "user", "parentId": "a1", "content": "b"},
        "a2": {"id": "a2", "role": "assistant", "parentId": "u2", "content": ""},  # being answered
    }
    return types.SimpleNamespace(user_id=owner, chat={"history": {"messages": messages}})


def test_the_store_reads_the_ids_of_the_answers_on_the_branch_of_the_users_own_chat(chats: dict[str, Any]) -> None:
    chats["chat-a"] = _stored_chat(owner="user-1")
    store = P.OpenWebUIStore()
    assert asyncio.run(store.stored_chat("chat-a", "user-1", "u2")).answers() == [[{"id": "m1", "text": "x"}]]
    assert asyncio.run(store.stored_chat("chat-a", "user-1", "a2")).answers() == [[{"id": "m1", "text": "x"}]]
    assert asyncio.run(store.stored_chat("chat-a", "user-2", "u2")) is None
    assert asyncio.run(store.stored_chat("local:x", "user-1", "u2")) is None


def test_the_pipe_sends_the_stored_ids_and_reads_the_store_only_for_a_chat_with_an_answer(sse_stub: Any) -> None:
    content, entries = _answer(LANGGRAPH_TURN)
    sse_stub.behaviour.data = events(T("ok"), FINISHED)
    pipe = make_pipe([{"id": AGENT, "name": "Desk", "transport": "agui", "url": sse_stub.url}])
    pipe.store = store = FakeStore(answers=[entries])
    asyncio.run(drive(pipe, AGENT, [{"role": "user", "content": "scenario:tool"}]))
    assert store.chat_reads == 0
    history = [
        {"role": "user", "content": "scenario:tool"},
        {"role": "assistant", "content": content},
        {"role": "user", "content": "again"},
    ]
    asyncio.run(drive(pipe, AGENT, history))
    assert store.chat_reads == 1
    sent = sse_stub.requests[-1]["json"]["messages"]
    assert [m["id"] for m in sent] == ["aihub-0", "lc_run--a", "tool-uuid-1", "lc_run--b", "aihub-2"]


def test_a_turn_with_earlier_answers_and_files_reads_the_stored_chat_once(sse_stub: Any) -> None:
    """Placing the files and the agent's own ids both come from the stored chat: one read of it
    (a query for the chat and one for its messages) per turn, not one per need."""
    content, entries = _answer(LANGGRAPH_TURN)
    sse_stub.behaviour.data = events(T("ok"), FINISHED)
    pipe = make_pipe([{"id": AGENT, "name": "Desk", "transport": "agui", "url": sse_stub.url}])
    pipe.store = store = FakeStore(answers=[entries])
    ref = store.add("f-1", "a.txt", "text/plain", b"alpha")
    store.stored = [[ref], []]  # the file on the first user message
    history = [
        {"role": "user", "content": "scenario:tool"},
        {"role": "assistant", "content": content},
        {"role": "user", "content": "again"},
    ]
    asyncio.run(drive(pipe, AGENT, history, metadata={"files": [ref]}))
    assert store.chat_reads == 1 and store.reads == ["f-1"]
    sent = sse_stub.requests[-1]["json"]["messages"]
    assert [m["id"] for m in sent] == ["aihub-0", "lc_run--a", "tool-uuid-1", "lc_run--b", "aihub-2"]
    assert "a.txt" in json.dumps(sent[0]["content"]) and "a.txt" not in json.dumps(sent[-1]["content"])


def test_the_real_store_reads_the_chat_once_for_both_the_files_and_the_ids(chats: dict[str, Any]) -> None:
    """What a turn reads of Open WebUI's database: one chat lookup however many parts need it."""
    chats["chat-a"] = _stored_chat(owner="user-1")
    lookups: list[str] = []
    model = sys.modules["open_webui.models.chats"].Chats
    original = model.get_chat_by_id

    async def counted(chat_id: str) -> Any:
        lookups.append(chat_id)
        return await original(chat_id)

    model.get_chat_by_id = counted
    chat = P.TurnChat(P.OpenWebUIStore(), "chat-a", "user-1", "u2")

    async def both() -> tuple[Any, Any]:
        return (await chat.get()).files(), (await chat.get()).answers()

    files, answers = asyncio.run(both())
    assert lookups == ["chat-a"]
    assert files == [[], []] and answers == [[{"id": "m1", "text": "x"}]]


def test_parts_of_a_turn_that_ask_at_once_share_one_read() -> None:
    class Slow(FakeStore):
        async def stored_chat(self, chat_id: str, user_id: str, message_id: str) -> Any:
            await asyncio.sleep(0.01)
            return await super().stored_chat(chat_id, user_id, message_id)

    store = Slow(answers=[[{"id": "m1"}]])
    chat = P.TurnChat(store, "chat-a", "user-1", "u2")

    async def both() -> list[Any]:
        return list(await asyncio.gather(chat.get(), chat.get()))

    first, second = asyncio.run(both())
    assert store.chat_reads == 1 and first is second and first.answers() == [[{"id": "m1"}]]


def test_a_failed_read_counts_as_no_stored_chat_and_is_logged_inside_open_webui(
    chats: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """Inside Open WebUI (its package imported) a missing module of its is a failure to log, not
    the silence of a test or script that runs the pipe alone."""

    class Moved(FakeStore):
        async def stored_chat(self, chat_id: str, user_id: str, message_id: str) -> Any:
            raise ImportError("No module named 'open_webui.models.chats'")

    with caplog.at_level("WARNING"):
        assert asyncio.run(P.TurnChat(Moved(), "chat-a", "user-1", "u2").get()) is None
    assert "reading the stored chat failed (ImportError)" in caplog.text
