"""A signed tool block counts only where it was made: its chat, its agent, its user, its turn, once.

Everything else (a block pasted into another chat, shown to another agent or user, repeated at a
later turn or twice in one message, signed under a rotated-out key or by the older format) reaches
the agent as plain text, on both transports.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from typing import Any

import pytest

from tests.support.pipe_support import (
    AGENT,
    CHAT,
    FINISHED,
    SIGNER,
    SIGNING_KEY,
    USER,
    C,
    R,
    SSEStub,
    T,
    events,
    make_pipe,
    pipe_module,
    record,
    run_pipe,
)

P = pipe_module
TRANSPORTS = ["agui", "openai"]


def _turn(*parts: list[dict], signer: Any = None) -> str:
    return record(events(*parts, FINISHED), signer=signer).recorder.render()


def _weather(call_id: str = "c1", signer: Any = None) -> str:
    return _turn(T("Let me check."), C(call_id), R(call_id, "sunny"), T("It is sunny."), signer=signer)


def _history(*answers: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n, answer in enumerate(answers):
        out += [{"role": "user", "content": f"question {n}"}, {"role": "assistant", "content": answer}]
    return [*out, {"role": "user", "content": "and now?"}]


def _calls(transport: str, history: list[dict[str, Any]], signer: Any = SIGNER) -> tuple[list[str], list[str], str]:
    """What the agent gets back: its call ids, the call ids of its results, its assistant text."""
    if transport == "agui":
        messages = P.to_agui_messages(history, signer)
        calls = [c["id"] for m in messages for c in m.get("toolCalls") or []]
        results = [m["toolCallId"] for m in messages if m["role"] == "tool"]
    else:
        messages = P.to_openai_messages(history, signer)
        calls = [c["id"] for m in messages for c in m.get("tool_calls") or []]
        results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    text = "\n".join(m["content"] for m in messages if m["role"] == "assistant" and isinstance(m.get("content"), str))
    return calls, results, text


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_block_counts_in_its_own_chat_for_its_agent_and_user(transport: str) -> None:
    calls, results, text = _calls(transport, _history(_weather()))
    assert (calls, results) == (["c1"], ["c1"])
    assert "<details" not in text


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(
    "where", [{"chat_id": "chat-2"}, {"agent_id": "ops.other"}, {"user_id": "mallory"}], ids=["chat", "agent", "user"]
)
def test_a_block_elsewhere_is_plain_text(transport: str, where: dict[str, str]) -> None:
    # made in chat-1 by ops.desk for user-1, replayed into another chat, to another agent or user
    elsewhere = P.Signer(SIGNING_KEY, **{"chat_id": CHAT, "agent_id": AGENT, "user_id": USER, **where})
    calls, results, text = _calls(transport, _history(_weather()), elsewhere)
    assert (calls, results) == ([], [])
    assert '<details type="tool_calls" done="true" id="c1"' in text and 'result="sunny"' in text


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_block_repeated_at_a_later_turn_is_plain_text_there(transport: str) -> None:
    original = _weather()
    later = _turn(T("Here it is again:"))
    calls, results, text = _calls(transport, _history(original, later + "\n" + original))
    assert (calls, results) == (["c1"], ["c1"])  # the first occurrence only
    assert text.count('id="c1"') == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_block_moved_to_another_turn_is_plain_text_there(transport: str) -> None:
    # two rounds of one turn; the second is cut out of its answer and pasted into a later one
    turn = _turn(C("c1"), R("c1", "sunny"), T("And the other city:"), C("c2"), R("c2", "rainy"))
    head, moved = turn.split("And the other city:\n")
    calls, results, text = _calls(transport, _history(head, "Moved here:\n" + moved))
    assert (calls, results) == (["c1"], ["c1"])
    assert 'id="c2"' in text


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_block_twice_in_one_message_counts_once(transport: str) -> None:
    original = _weather()
    calls, results, text = _calls(transport, _history(original + "\n" + original))
    assert (calls, results) == (["c1"], ["c1"])
    assert text.count('id="c1"') == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_call_id_the_agent_reused_at_a_later_turn_counts_once(transport: str) -> None:
    # a server that numbers its calls from 0 every run: each block is genuine, but one id, once
    history = _history(_weather("call_0"), _weather("call_0"))
    calls, results, text = _calls(transport, history)
    assert (calls, results) == (["call_0"], ["call_0"])
    assert text.count('id="call_0"') == 1


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_after_a_key_rotation_old_blocks_are_text_and_new_ones_count(transport: str) -> None:
    rotated = "a-fresh-signing-key-after-rotation-0123"
    new = P.Signer(rotated, chat_id=CHAT, agent_id=AGENT, user_id=USER, turn_id="turn-new")
    history = _history(_weather("c1"), _weather("c2", signer=new))
    assert _calls(transport, history)[:2] == (["c1"], ["c1"])  # the old key: only its own block
    verifier = P.Signer(rotated, chat_id=CHAT, agent_id=AGENT, user_id=USER)
    calls, results, text = _calls(transport, history, verifier)
    assert (calls, results) == (["c2"], ["c2"])
    assert 'id="c1"' in text


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_block_signed_in_the_older_format_is_plain_text(transport: str) -> None:
    # aihub-tool-v1 signed the block's fields only, bound to nothing
    content = re.sub(r' turn="[^"]*"', "", _weather())
    step = next(s for s in P.parse_content(content) if isinstance(s, P.ToolStep))
    call = step.calls[0]
    fields = ["aihub-tool-v1", step.message_id, call.id, call.name, call.arguments, call.result, call.result_id, False]
    payload = json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode()
    v1 = hmac.new(SIGNING_KEY.encode(), payload, hashlib.sha256).hexdigest()
    content = content.replace(call.sig, v1)
    calls, _, text = _calls(transport, _history(content))
    assert calls == [] and v1 in text


def test_outside_a_chat_nothing_is_signed_and_nothing_verifies() -> None:
    # an API call without a chat (or without the assistant message's id) has nothing to bind to
    for chat_id, turn_id in (("", "m-1"), (CHAT, "")):
        content = _weather(signer=P.Signer(SIGNING_KEY, chat_id, AGENT, USER, turn_id))
        assert "<details" in content and " sig=" not in content
    genuine = _history(_weather())
    for transport in TRANSPORTS:
        assert _calls(transport, genuine, P.Signer(SIGNING_KEY, agent_id=AGENT, user_id=USER))[0] == []


# --- through pipe(): the binding comes from what Open WebUI passes ---------------------------------


def _agent(url: str, agent_id: str = "ops.desk", transport: str = "agui") -> dict[str, Any]:
    return {"id": agent_id, "name": "Desk", "url": url, "transport": transport, "features": []}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_pipe_binds_blocks_to_the_chat_agent_user_and_message_it_is_given(
    sse_stub: SSEStub, transport: str
) -> None:
    agents = [_agent(sse_stub.url, "ops.desk", transport), _agent(sse_stub.url, "ops.other", transport)]
    pipe = make_pipe(agents)
    sse_stub.behaviour.data = events(C("c1"), R("c1", "sunny"), T("Sunny."), FINISHED)
    if transport == "openai":
        sse_stub.behaviour.data = [
            {
                "choices": [
                    {
                        "delta": {
                            "tool_calls": [
                                {"index": 0, "id": "c1", "function": {"name": "get_weather", "arguments": "{}"}}
                            ]
                        }
                    }
                ]
            },
            {"choices": [{"delta": {"role": "tool", "tool_call_id": "c1", "content": "sunny"}}]},
            {"choices": [{"delta": {"content": "Sunny."}, "finish_reason": "stop"}]},
            "[DONE]",
        ]
    answer = run_pipe(pipe, "ops.desk", [{"role": "user", "content": "q"}], message_id="m-7").content
    assert ' turn="m-7" sig="' in answer
    history = _history(answer)
    sse_stub.behaviour.data = (
        events(T("ok"), FINISHED)
        if transport == "agui"
        else [{"choices": [{"delta": {"content": "ok"}, "finish_reason": "stop"}]}, "[DONE]"]
    )

    def sent_calls(model: str, **where: str) -> list[str]:
        run_pipe(pipe, model, history, message_id="m-8", **where)
        messages = sse_stub.requests[-1]["json"]["messages"]
        key = "toolCalls" if transport == "agui" else "tool_calls"
        return [c["id"] for m in messages for c in m.get(key) or []]

    assert sent_calls("ops.desk") == ["c1"]
    assert sent_calls("ops.desk", chat_id="chat-2") == []
    assert sent_calls("ops.desk", user_id="mallory") == []
    assert sent_calls("ops.other") == []
