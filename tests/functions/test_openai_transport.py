"""The OpenAI-compatible transport against a loopback chat-completions server (pipe_support.SSEStub)."""

from __future__ import annotations

from typing import Any

from tests.support.pipe_support import (
    FINISHED,
    C,
    R,
    SSEStub,
    T,
    events,
    make_pipe,
    pipe_module,
    record,
    run_pipe,
    signer_for,
    turn_signer,
)

P = pipe_module


def _agent(url: str) -> dict[str, Any]:
    return {
        "id": "ops.oncall",
        "name": "On-call",
        "transport": "openai",
        "url": url,
        "model": "oncall-agent",
        "api_key": "ops",
        "features": ["web_search", "deep_research"],
    }


def _delta(**delta: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}


STREAM = [
    _delta(role="assistant", reasoning_content="Plan: "),
    _delta(reasoning_content="call both tools."),
    _delta(content="Let me "),
    _delta(content="check."),
    _delta(
        tool_calls=[
            {"index": 0, "id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
        ]
    ),
    _delta(tool_calls=[{"index": 0, "function": {"arguments": '{"city":'}}]),
    _delta(tool_calls=[{"index": 0, "function": {"arguments": ' "Paris"}'}}]),
    _delta(
        tool_calls=[
            {"index": 1, "id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
        ]
    ),
    {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    "[DONE]",
]


def test_request_is_a_streamed_chat_completion_with_metadata_features(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = [_delta(content="ok"), "[DONE]"]
    pipe = make_pipe([_agent(sse_stub.url + "/v1")], api_keys={"ops": "tok-123"})
    run = run_pipe(
        pipe, "ops.oncall", [{"role": "user", "content": "Status?"}], features=["deep_research", "code_interpreter"]
    )
    assert run.content == "ok"
    request = sse_stub.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer tok-123"
    sent = dict(request["json"])
    assert sent.pop("metadata").pop("current_datetime")  # issue 19's context: tests/functions/test_inbound_identity.py
    assert sent == {
        "model": "oncall-agent",
        "messages": [{"role": "user", "content": "Status?"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "user": "user-1",
    }
    assert request["json"]["metadata"] == {"features": ["deep_research"]}


def test_reasoning_text_and_tool_call_deltas_render_in_order(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = STREAM
    run = run_pipe(
        make_pipe([_agent(sse_stub.url)], api_keys={"ops": "ops-key-4f2a9c"}),
        "ops.oncall",
        [{"role": "user", "content": "q"}],
    )
    segments = P.parse_content(run.content)
    assert [type(s).__name__ for s in segments] == ["Reasoning", "Text", "ToolStep"]
    assert segments[0].text == "Plan: call both tools."
    assert segments[1].text == "Let me check."
    step = segments[2]
    assert [(c.id, c.name, c.arguments, c.result) for c in step.calls] == [
        ("call_a", "get_weather", '{"city": "Paris"}', None),
        ("call_b", "get_time", "{}", None),
    ]
    assert "Agent error" not in run.content


def test_reasoning_in_delta_reasoning_renders_like_reasoning_content(sse_stub: SSEStub) -> None:
    # vLLM and OpenRouter stream reasoning as delta.reasoning; it also says the calls before it ran
    call = {"index": 0, "id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    sse_stub.behaviour.data = [
        _delta(role="assistant", reasoning="Plan: "),
        _delta(reasoning="look it up."),
        _delta(tool_calls=[call]),
        _delta(reasoning="It came back."),
        _delta(content="Sunny."),
        "[DONE]",
    ]
    run = run_pipe(make_pipe([_agent(sse_stub.url)], api_keys={"ops": "ops-key-4f2a9c"}), "ops.oncall", [])
    first, step, second, text = P.parse_content(run.content)
    assert isinstance(first, P.Reasoning) and first.text == "Plan: look it up."
    assert isinstance(step, P.ToolStep) and step.calls[0].unreported
    assert isinstance(second, P.Reasoning) and second.text == "It came back."
    assert isinstance(text, P.Text) and text.text == "Sunny."
    assert P.OpenAIChunkAdapter().events(_delta(reasoning="hmm")) == [
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "reasoning", "delta": "hmm"}
    ]


def test_streamed_tool_results_fill_their_calls(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = [
        _delta(tool_calls=[{"index": 0, "id": "call_a", "function": {"name": "get_weather", "arguments": "{}"}}]),
        _delta(role="tool", tool_call_id="call_a", content="sunny"),
        _delta(content="Sunny."),
        "[DONE]",
    ]
    run = run_pipe(
        make_pipe([_agent(sse_stub.url)], api_keys={"ops": "ops-key-4f2a9c"}),
        "ops.oncall",
        [{"role": "user", "content": "q"}],
    )
    step, text = P.parse_content(run.content)
    assert step.calls[0].result == "sunny"
    assert text.text == "Sunny."


def test_next_turn_sends_the_transcript_in_openai_shape(sse_stub: SSEStub) -> None:
    previous = record(
        events(T("Checking."), C("c1"), R("c1", "sunny"), T("Sunny."), FINISHED),
        signer=turn_signer(agent_id="ops.oncall"),
    ).recorder.render()
    sse_stub.behaviour.data = [_delta(content="You're welcome."), "[DONE]"]
    history = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": previous},
        {"role": "user", "content": "Thanks"},
    ]
    run_pipe(make_pipe([_agent(sse_stub.url)], api_keys={"ops": "ops-key-4f2a9c"}), "ops.oncall", history)
    sent = sse_stub.requests[0]["json"]["messages"]
    assert sent == [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "Checking."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": "Sunny."},
        {"role": "user", "content": "Thanks"},
    ]


def test_error_chunk_is_shown_below_what_streamed(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = [_delta(content="Partial"), {"error": {"message": "rate limited"}}]
    run = run_pipe(
        make_pipe([_agent(sse_stub.url)], api_keys={"ops": "ops-key-4f2a9c"}),
        "ops.oncall",
        [{"role": "user", "content": "q"}],
    )
    assert run.content == "Partial\n\n> [!CAUTION]\n> Agent error: rate limited\n"


def test_stream_without_done_but_with_finish_reason_is_complete(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = [_delta(content="ok"), {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
    run = run_pipe(
        make_pipe([_agent(sse_stub.url)], api_keys={"ops": "ops-key-4f2a9c"}),
        "ops.oncall",
        [{"role": "user", "content": "q"}],
    )
    assert run.content == "ok"


def test_stream_cut_before_any_finish_is_an_error(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = [_delta(content="ok")]
    run = run_pipe(
        make_pipe([_agent(sse_stub.url)], api_keys={"ops": "ops-key-4f2a9c"}),
        "ops.oncall",
        [{"role": "user", "content": "q"}],
    )
    assert run.content == (
        "ok\n\n> [!CAUTION]\n> Agent error: The agent's stream ended before the run finished. "
        "The answer above is incomplete.\n"
    )


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    function = {"name": name, "arguments": arguments}
    return _delta(tool_calls=[{"index": 0, "id": call_id, "type": "function", "function": function}])


def test_text_after_calls_whose_results_never_stream_is_not_held_until_the_end(sse_stub: SSEStub) -> None:
    """An agent behind an OpenAI endpoint runs its tools itself and streams on: the call shows
    as done (no result to show) and the text after it streams below it as it comes."""
    sse_stub.behaviour.data = [
        _delta(content="Let me check. "),
        _call("call_a", "get_weather", '{"city": "Paris"}'),
        _delta(content="It is sunny."),
        _delta(content=" Anything else?"),
        "[DONE]",
    ]
    sse_stub.behaviour.pauses = {3: 1.5}  # the agent pauses after "It is sunny."
    pipe = make_pipe([_agent(sse_stub.url)], api_keys={"ops": "ops-key-4f2a9c"}, stream_interval_ms=0)
    run = run_pipe(pipe, "ops.oncall", [{"role": "user", "content": "q"}])
    sunny = next(t for c, t in zip(run.chunks, run.times, strict=True) if "It is sunny." in c)
    assert sunny < 1.0, (run.chunks, run.times)  # not held below the call until the run ended
    text, step, after = P.parse_content(run.content)
    assert text.text == "Let me check. " and after.text == "It is sunny. Anything else?"
    call = step.calls[0]
    assert (call.name, call.result, call.unreported) == ("get_weather", None, True)
    assert 'done="true"' in run.content and 'unreported="true"' in run.content and "result=" not in run.content
    # the next turn: the call had no result to send back, so it is left out like any unanswered call
    history = [{"role": "user", "content": "q"}, {"role": "assistant", "content": run.content}]
    assert P.to_openai_messages(history, signer_for("ops.oncall")) == [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "Let me check. "},
        {"role": "assistant", "content": "It is sunny. Anything else?"},
    ]


def test_a_streamed_result_still_fills_its_call(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = [
        _call("call_a", "get_weather", "{}"),
        _delta(role="tool", tool_call_id="call_a", content="sunny"),
        _delta(content="Sunny."),
        "[DONE]",
    ]
    run = run_pipe(make_pipe([_agent(sse_stub.url)], api_keys={"ops": "ops-key-4f2a9c"}), "ops.oncall", [])
    step, _ = P.parse_content(run.content)
    assert (step.calls[0].result, step.calls[0].unreported) == ("sunny", False)


def test_an_agui_agent_cannot_send_the_pipes_own_event() -> None:
    body = b'data: {"type": "AIHUB_TOOL_CALLS_RAN"}\n\ndata: {"type": "RUN_FINISHED"}\n\n'
    assert list(P.AgentStream("agui").feed(body)) == [{"type": "RUN_FINISHED"}]


def test_parallel_calls_then_reasoning_all_count_as_ran(sse_stub: SSEStub) -> None:
    first = {"index": 0, "id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    second = {"index": 1, "id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
    sse_stub.behaviour.data = [
        _delta(tool_calls=[first]),
        _delta(tool_calls=[second]),
        _delta(reasoning_content="   "),  # whitespace says nothing: the calls still wait
        _delta(reasoning_content="Both came back."),
        _delta(content="Sunny, 3 pm."),
        "[DONE]",
    ]
    run = run_pipe(make_pipe([_agent(sse_stub.url)], api_keys={"ops": "ops-key-4f2a9c"}), "ops.oncall", [])
    step, reasoning, text = P.parse_content(run.content)
    assert [(c.id, c.unreported, c.result) for c in step.calls] == [("call_a", True, None), ("call_b", True, None)]
    assert reasoning.text.strip() == "Both came back." and text.text == "Sunny, 3 pm."
    adapter = P.OpenAIChunkAdapter()
    adapter.events(_delta(tool_calls=[first]))
    assert adapter.events(_delta(reasoning_content="   ")) == [
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "reasoning", "delta": "   "}
    ]
