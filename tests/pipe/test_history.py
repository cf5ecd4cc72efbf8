"""The ordered transcript survives the next turn, for both transports."""

from __future__ import annotations

from pipe_support import FINISHED, C, R, T, Z, agui_shape, events, pipe_module, record

P = pipe_module


def _turn(*parts: list[dict]) -> str:
    return record(events(*parts, FINISHED)).recorder.render()


def _conversation() -> list[dict]:
    first = _turn(
        Z("r1", "plan"), T("Let me check."), C("c1", args='{"city": "Paris"}'), R("c1", "sunny"), T("It is sunny.")
    )
    second = _turn(T("Both:"), C("c2", "a"), C("c3", "b"), R("c2", "1"), R("c3", "2"), T("Done."))
    return [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": first},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "And"},
                {"type": "image_url", "image_url": {"url": "x"}},
                {"type": "text", "text": "more?"},
            ],
        },
        {"role": "assistant", "content": second},
        {"role": "user", "content": "Thanks"},
    ]


def test_agui_history_keeps_text_calls_results_text_across_turns() -> None:
    messages = P.to_agui_messages(_conversation())
    assert agui_shape(messages) == [
        'system"Be brief."',
        'user"Weather?"',
        'A"Let me check."',
        "TC[c1]",
        "tool(c1)",
        'A"It is sunny."',
        'user"And\nmore?"',
        'A"Both:"',
        "TC[c2,c3]",
        "tool(c2)",
        "tool(c3)",
        'A"Done."',
        'user"Thanks"',
    ]
    call = messages[3]["toolCalls"][0]
    assert call == {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    assert messages[4] == {"id": "res-c1", "role": "tool", "toolCallId": "c1", "content": "sunny"}
    ids = [m["id"] for m in messages]
    assert len(ids) == len(set(ids))


def test_agui_history_ids_are_stable_from_turn_to_turn() -> None:
    # The same conversation sent twice (two turns later) must carry the same ids: no duplicates
    # for servers that deduplicate by id.
    assert P.to_agui_messages(_conversation()) == P.to_agui_messages(_conversation())


def test_agui_history_keeps_a_call_that_never_got_a_result() -> None:
    content = _turn(T("Please confirm."), C("c9", "confirm_booking"))
    messages = P.to_agui_messages([{"role": "user", "content": "book"}, {"role": "assistant", "content": content}])
    assert agui_shape(messages) == ['user"book"', 'A"Please confirm."', "TC[c9]"]


def test_agui_history_leaves_reasoning_and_errors_in_the_ui() -> None:
    content = record(events(Z("r1", "hmm"), T("partial"), [{"type": "RUN_ERROR", "message": "x"}])).recorder.render()
    messages = P.to_agui_messages([{"role": "assistant", "content": content}])
    assert agui_shape(messages) == ['A"partial"']


def test_openai_history_is_the_same_order_in_openai_shape() -> None:
    messages = P.to_openai_messages(_conversation())
    roles = [(m["role"], bool(m.get("tool_calls"))) for m in messages]
    assert roles == [
        ("system", False),
        ("user", False),
        ("assistant", False),
        ("assistant", True),
        ("tool", False),
        ("assistant", False),
        ("user", False),
        ("assistant", False),
        ("assistant", True),
        ("tool", False),
        ("tool", False),
        ("assistant", False),
        ("user", False),
    ]
    assert messages[3]["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    ]
    assert messages[4] == {"role": "tool", "tool_call_id": "c1", "content": "sunny"}
    assert messages[6]["content"][1]["type"] == "image_url"  # user parts pass through untouched


def test_openai_history_drops_calls_nobody_answered() -> None:
    content = _turn(T("Please confirm."), C("c9", "confirm_booking"))
    messages = P.to_openai_messages([{"role": "assistant", "content": content}])
    assert messages == [{"role": "assistant", "content": "Please confirm."}]


def test_native_open_webui_tool_history_is_converted_for_agui() -> None:
    history = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "n1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "n2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "n1", "content": "one"},
        {"role": "tool", "tool_call_id": "n2", "content": "two"},
    ]
    assert agui_shape(P.to_agui_messages(history)) == ["TC[n1,n2]", "tool(n1)", "tool(n2)"]


def test_ids_a_server_reused_in_two_runs_are_made_unique() -> None:
    turn = _turn(T("a"), C("c1", parent="msg-1"), R("c1", mid="res-1"))  # same ids both times
    history = [
        {"role": "assistant", "content": turn},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": turn},
    ]
    messages = P.to_agui_messages(history)
    ids = [m["id"] for m in messages]
    assert len(ids) == len(set(ids))
    assert agui_shape(messages) == ['A"a"', "TC[c1]", "tool(c1)", 'user"again"', 'A"a"', "TC[c1]", "tool(c1)"]
