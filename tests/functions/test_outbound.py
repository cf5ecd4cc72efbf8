"""What the agent shows beside its answer: token usage, sources, steps (issue 20), both transports
against a loopback server (pipe_support.SSEStub), as Open WebUI receives them from the pipe."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.pipe_support import ERROR, FINISHED, C, R, SSEStub, T, events, make_pipe, pipe_module, run_pipe

P = pipe_module
HISTORY = [{"role": "user", "content": "q"}]
KEY = "sk-outbound-secret-7f3a9b"


def _agui(url: str) -> dict[str, Any]:
    return {"id": "lab.helper", "name": "Helper", "transport": "agui", "url": url}


def _openai(url: str) -> dict[str, Any]:
    return {"id": "lab.helper", "name": "Helper", "transport": "openai", "url": url, "api_key": "k"}


def _custom(name: str, value: Any) -> list[dict[str, Any]]:
    return [{"type": "CUSTOM", "name": name, "value": value}]


def _delta(**delta: Any) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}


def _usage(run: Any) -> list[dict[str, Any]]:
    return [item["usage"] for item in run.data if "usage" in item]


def _af_usage(i: int, o: int) -> list[dict[str, Any]]:  # Agent Framework 1.7.0: the run's usage so far
    return _custom("usage", {"input_token_count": i, "output_token_count": o, "total_token_count": i + o})


# --- usage -------------------------------------------------------------------------------------------


def test_the_last_usage_report_counts_and_is_yielded_once_after_the_answer(sse_stub: SSEStub) -> None:
    # after each model call Agent Framework 1.7.0 reports the run's usage so far
    sse_stub.behaviour.data = events(
        T("Let me check."), _af_usage(10, 4), C("c1"), R("c1"), T("Done."), _af_usage(30, 10), FINISHED
    )
    run = run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY)
    assert _usage(run) == [
        {"prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40, "input_tokens": 30, "output_tokens": 10}
    ]
    assert run.content.startswith("Let me check.") and run.content.endswith("Done.")


def test_run_finished_usage_is_the_runs_total_and_wins_over_per_call_reports(sse_stub: SSEStub) -> None:
    finished = [
        {
            **FINISHED[0],
            "usage": [
                {
                    "provider": "openai",
                    "model": "a",
                    "input_tokens": 7,
                    "output_tokens": 3,
                    "total_tokens": 10,
                    "reasoning_tokens": 2,
                },
                {
                    "provider": "openai",
                    "model": "b",
                    "input_tokens": 5,
                    "output_tokens": 1,
                    "total_tokens": 6,
                    "cached_input_tokens": 4,
                },
            ],
        }
    ]
    sse_stub.behaviour.data = events(T("Hi."), _af_usage(99, 99), finished)
    (usage,) = _usage(run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY))
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (12, 4, 16)
    assert usage["completion_tokens_details"] == {"reasoning_tokens": 2}
    assert usage["prompt_tokens_details"] == {"cached_tokens": 4}


def test_ag_ui_1_0_usage_is_camel_case_on_the_wire(sse_stub: SSEStub) -> None:
    # ag-ui-langgraph 0.0.47 and ag-ui-strands send 1.0's TokenUsage as its JSON Schema names it
    finished = [
        {
            **FINISHED[0],
            "usage": [
                {
                    "provider": "p",
                    "inputTokens": 60,
                    "outputTokens": 14,
                    "totalTokens": 74,
                    "reasoningTokens": 3,
                    "cachedInputTokens": 9,
                }
            ],
        }
    ]
    sse_stub.behaviour.data = events(T("Hi."), finished)
    (usage,) = _usage(run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY))
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (60, 14, 74)
    assert usage["completion_tokens_details"] == {"reasoning_tokens": 3}
    assert usage["prompt_tokens_details"] == {"cached_tokens": 9}


def test_a_run_that_ends_in_an_error_after_usage_reports_it_once(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(T("partial"), _af_usage(8, 2), ERROR("boom", "RuntimeError"))
    run = run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY)
    assert "Agent error: boom (RuntimeError)" in run.content
    assert [u["total_tokens"] for u in _usage(run)] == [10]


def test_a_stream_that_breaks_after_usage_still_reports_it_once(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(T("partial"), _af_usage(8, 2))  # no RUN_FINISHED
    run = run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY)
    assert "stream ended before the run finished" in run.content
    assert [u["total_tokens"] for u in _usage(run)] == [10]


def test_no_usage_sent_means_no_usage_chunk(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(T("Hi."), FINISHED)
    assert run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY).data == []


def test_a_response_that_does_not_stream_gets_no_usage_chunk(sse_stub: SSEStub) -> None:
    # Open WebUI joins a non-streamed pipe's chunks into the text: a dict would land in the answer
    sse_stub.behaviour.data = events(T("Hi."), _af_usage(1, 1), FINISHED)
    run = run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY, stream=False)
    assert run.data == [] and run.content == "Hi."


def test_openai_backends_are_asked_for_usage_and_its_final_chunk_is_yielded(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = [
        _delta(role="assistant", content="Hello"),
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {
            "id": "c",
            "choices": [],
            "usage": {
                "prompt_tokens": 17,
                "completion_tokens": 5,
                "total_tokens": 22,
                "completion_tokens_details": {"reasoning_tokens": 1},
            },
        },
        "[DONE]",
    ]
    run = run_pipe(make_pipe([_openai(sse_stub.url)], api_keys={"k": KEY}), "lab.helper", HISTORY)
    assert sse_stub.requests[0]["json"]["stream_options"] == {"include_usage": True}
    assert run.content == "Hello"
    assert _usage(run) == [
        {
            "prompt_tokens": 17,
            "completion_tokens": 5,
            "total_tokens": 22,
            "input_tokens": 17,
            "output_tokens": 5,
            "completion_tokens_details": {"reasoning_tokens": 1},
        }
    ]


def test_an_agui_server_cannot_send_the_pipes_own_usage_event(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = [{"type": P.USAGE, "usage": {"total_tokens": 5}}, *events(T("Hi."), FINISHED)]
    assert run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY).data == []


@pytest.mark.parametrize("report", [{"input_tokens": True}, {"input_tokens": -3}, {"input_tokens": "9"}, "x", None])
def test_usage_that_is_not_a_count_is_ignored(report: Any) -> None:
    assert P.usage_counts(report) == {}


# --- sources -----------------------------------------------------------------------------------------


def test_agui_sources_are_emitted_once_each_masked_and_escaped(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(
        _custom(
            "aihub.source",
            {
                "url": "https://docs.example.org/a?q=1",
                "title": "Guide <b>A</b> & more",
                "snippet": f"token {KEY} in the text",
            },
        ),
        T("Answer."),
        _custom(
            "aihub.source",
            [
                {"url": "https://docs.example.org/a?q=1", "title": "again"},
                {"url": "javascript:alert(1)", "title": "Bad link"},
                {"url": f"https://x.example.org/?key={KEY}", "title": "Keyed"},
            ],
        ),
        FINISHED,
    )
    run = run_pipe(make_pipe([_agui(sse_stub.url)], api_keys={"k": KEY}), "lab.helper", HISTORY)
    sources = run.sources
    assert [s["source"].get("url") for s in sources] == [
        "https://docs.example.org/a?q=1",
        None,
        "https://x.example.org/?key=[redacted]",
    ]
    first = sources[0]
    assert first["source"]["name"] == "Guide &lt;b&gt;A&lt;/b&gt; &amp; more"
    assert first["document"] == ["token [redacted] in the text"]
    assert first["metadata"] == [{"source": "https://docs.example.org/a?q=1", "name": first["source"]["name"]}]
    assert sources[1]["source"] == {"name": "Bad link"}  # no javascript: link, the title stays
    assert KEY not in repr(run.events)
    # sent when the turn ends, after its last status
    assert [e["type"] for e in run.events] == ["status", "source", "source", "source"]


def test_agent_framework_citations_become_sources(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(
        T("Cited."),
        _custom(
            "annotations",
            {
                "messageId": "t1",
                "annotations": [
                    {"type": "citation", "title": "Paper", "url": "https://example.org/paper", "snippet": "a quote"},
                    {"type": "citation", "title": "No link", "file_id": "f1"},
                ],
            },
        ),
        FINISHED,
    )
    run = run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY)
    assert [(s["source"]["name"], s["source"]["url"], s["document"]) for s in run.sources] == [
        ("Paper", "https://example.org/paper", ["a quote"])
    ]


def test_openai_url_citations_become_sources(sse_stub: SSEStub) -> None:
    citation = {
        "type": "url_citation",
        "url_citation": {"url": "https://example.org/n", "title": "News", "start_index": 0, "end_index": 4},
    }
    sse_stub.behaviour.data = [
        _delta(content="News", annotations=[citation, {"type": "file_citation", "file_id": "f"}]),
        _delta(content=".", annotations=[citation]),
        "[DONE]",
    ]
    run = run_pipe(make_pipe([_openai(sse_stub.url)], api_keys={"k": KEY}), "lab.helper", HISTORY)
    assert run.content == "News."
    assert [(s["source"]["name"], s["source"]["url"]) for s in run.sources] == [("News", "https://example.org/n")]


# --- steps -------------------------------------------------------------------------------------------


def _step(name: str) -> list[dict[str, Any]]:
    return [{"type": "STEP_STARTED", "stepName": name}, {"type": "STEP_FINISHED", "stepName": name}]


def test_steps_show_in_the_status_line_in_order_when_the_agent_dwells_in_them(sse_stub: SSEStub) -> None:
    stream = events(
        _step("superstep:1"),
        _step("researcher"),
        T("a"),
        _step("writer"),
        _custom("status", {"state": "in_progress"}),
        T("b"),
        FINISHED,
    )
    sse_stub.behaviour.data = stream
    # the agent dwells after "researcher" started, after the workflow status, and not after "writer"
    sse_stub.behaviour.pauses = {3: 0.9, 8: 0.9}
    run = run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY)
    assert run.statuses == ["researcher…", "Workflow in progress…", "Done"]
    assert all("step" not in e["data"] for e in run.events)
    assert run.content == "ab"


def test_a_fast_agent_sends_no_step_status(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(_step("researcher"), _step("writer"), T("Hi."), FINISHED)
    run = run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY)
    assert run.statuses == ["Done"]


def test_a_step_is_followed_by_a_tool_status_in_order(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(_step("look_up"), C("c1"), R("c1"), T("ok"), FINISHED)
    sse_stub.behaviour.pauses = {2: 0.9}
    run = run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY)
    assert run.statuses == ["look up…", "Running get_weather…", "Done"]


# --- images ------------------------------------------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
PNG_B64 = __import__("base64").b64encode(PNG).decode()


@pytest.fixture
def stored(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Open WebUI's file store, faked: what the pipe asked it to store, and as whom."""
    calls: list[tuple[Any, ...]] = []

    async def store(images: Any, request: Any, user: Any, metadata: Any) -> list[str]:
        calls.append((images, user["id"], metadata["chat_id"], metadata["message_id"]))
        return [f"/api/v1/files/f{n}/content" for n in range(len(images))]

    monkeypatch.setattr(P, "store_images", store)
    return calls


def _files(run: Any) -> list[list[dict[str, Any]]]:
    return [e["data"]["files"] for e in run.events if e.get("type") == "files"]


def test_an_agui_image_is_stored_as_the_chats_user_and_attached_by_url(sse_stub: SSEStub, stored: list) -> None:
    sse_stub.behaviour.data = events(
        T("Here is your chart."), _custom("aihub.image", {"mimeType": "image/png", "data": PNG_B64}), FINISHED
    )
    run = run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY, user_id="u-42", chat_id="chat-9")
    assert stored == [([("image/png", PNG)], "u-42", "chat-9", "m-1")]
    assert _files(run) == [[{"type": "image", "url": "/api/v1/files/f0/content"}]]
    assert run.content == "Here is your chart."  # never the bytes in the text


def test_an_openai_delta_image_is_stored(sse_stub: SSEStub, stored: list) -> None:
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}}
    sse_stub.behaviour.data = [_delta(content="Drawn."), _delta(images=[image]), "[DONE]"]
    run = run_pipe(make_pipe([_openai(sse_stub.url)], api_keys={"k": KEY}), "lab.helper", HISTORY)
    assert stored[0][0] == [("image/png", PNG)]
    assert _files(run) == [[{"type": "image", "url": "/api/v1/files/f0/content"}]]
    assert run.content == "Drawn."


def test_an_image_over_the_limit_gets_a_line_where_it_arrived_and_is_not_stored(
    sse_stub: SSEStub, stored: list
) -> None:
    big = __import__("base64").b64encode(b"\0" * 300_000).decode()
    sse_stub.behaviour.data = events(
        T("Before."), _custom("aihub.image", {"mimeType": "image/png", "data": big}), T("After."), FINISHED
    )
    pipe = make_pipe([_agui(sse_stub.url)])
    pipe.valves.MAX_IMAGE_MB = 0.25
    run = run_pipe(pipe, "lab.helper", HISTORY)
    assert stored == [] and _files(run) == []
    assert run.content == (
        "Before.\n\n*The agent made an image of 0.3 MB, over this chat's limit of 0.25 MB, "
        "so it is not shown.*\n\nAfter."
    )


def test_an_image_that_cannot_be_stored_says_so_and_keeps_the_answer(sse_stub: SSEStub) -> None:
    # no Open WebUI around (as for a release whose file store the pipe cannot use)
    sse_stub.behaviour.data = events(
        T("Chart."), _custom("aihub.image", {"mimeType": "image/png", "data": PNG_B64}), FINISHED
    )
    run = run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY)
    assert run.content == "Chart."
    assert run.statuses[-1] == "The agent made an image that could not be stored"
    assert _files(run) == []


def test_what_is_not_an_image_is_ignored(sse_stub: SSEStub, stored: list) -> None:
    sse_stub.behaviour.data = events(
        T("x"),
        _custom("aihub.image", [{"mimeType": "text/html", "data": PNG_B64}, {"url": "javascript:alert(1)"}, "junk"]),
        FINISHED,
    )
    run = run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY)
    assert stored == [] and _files(run) == []


# --- questions (AG-UI interrupts) ----------------------------------------------------------------------


def _paused(*interrupts: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**FINISHED[0], "outcome": {"type": "interrupt", "interrupts": list(interrupts)}}]


CITY = {
    "id": "i1",
    "reason": "input",
    "message": "Which <city>?",
    "responseSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def _dialog(stub: SSEStub, answer: Any, then: list[dict[str, Any]]) -> Any:
    questions: list[dict[str, Any]] = []

    async def event_call(question: dict[str, Any]) -> Any:
        questions.append(question)
        stub.behaviour.data = then  # what the resumed run streams
        return answer

    event_call.questions = questions  # type: ignore[attr-defined]  # the tests read the questions off the callable
    return event_call


def test_a_question_with_a_response_schema_opens_the_input_dialog_and_resumes_the_run(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(T("Let me ask."), _paused(CITY))
    dialog = _dialog(sse_stub, "Paris", events(T(" Paris it is."), FINISHED))
    run = run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    assert dialog.questions == [
        {
            "type": "input",
            "data": {"title": "The agent asks", "message": "Which &#60;city&#62;&#63;", "placeholder": "Your answer"},
        }
    ]
    first, resumed = (r["json"] for r in sse_stub.requests)
    assert resumed["threadId"] == first["threadId"] and resumed["runId"] != first["runId"]
    assert resumed["resume"] == [{"interruptId": "i1", "status": "resolved", "payload": {"city": "Paris"}}]
    assert [m["role"] for m in resumed["messages"]] == ["user", "assistant"]  # the paused run's text came along
    assert run.content == "Let me ask. Paris it is."
    assert "Waiting for your answer…" in run.statuses


@pytest.mark.parametrize("answer", [None, "", {"error": "Client session disconnected."}])
def test_an_unanswered_question_is_cancelled_and_the_run_ends_without_a_hang(sse_stub: SSEStub, answer: Any) -> None:
    sse_stub.behaviour.data = events(T("Let me ask."), _paused(CITY))
    dialog = _dialog(sse_stub, answer, events(T(" I will guess."), FINISHED))
    run = run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    assert sse_stub.requests[1]["json"]["resume"] == [{"interruptId": "i1", "status": "cancelled"}]
    assert run.content == "Let me ask. I will guess."


def test_the_approval_dialog_shows_the_tool_and_its_arguments_with_keys_masked(sse_stub: SSEStub) -> None:
    approval = {
        "id": "a1",
        "reason": "tool_call",
        "toolCallId": "c1",
        "message": f"Approve running deploy? {KEY}",
        "responseSchema": {"type": "object", "properties": {"approved": {"type": "boolean"}}},
    }
    sse_stub.behaviour.data = events(C("c1", "deploy", f'{{"token": "{KEY}", "env": "<prod>"}}'), _paused(approval))
    dialog = _dialog(sse_stub, True, events(R("c1", "deployed"), T("Done."), FINISHED))
    run = run_pipe(make_pipe([_agui(sse_stub.url)], api_keys={"k": KEY}), "lab.helper", HISTORY, event_call=dialog)
    (question,) = dialog.questions
    assert question["type"] == "confirmation" and question["data"]["title"] == "Allow deploy?"
    # Markdown in the dialog: the message's punctuation as character references, the arguments code
    assert question["data"]["message"] == (
        "The agent wants to run ` deploy `.\n\nApprove running deploy&#63; &#91;redacted&#93;\n\n"
        'Arguments:\n\n```\n{"token": "[redacted]", "env": "<prod>"}\n```'
    )
    assert sse_stub.requests[1]["json"]["resume"][0]["payload"] == {"approved": True}
    assert 'result="[approved by the user] deployed"' in run.content and run.content.endswith("Done.")


def test_an_agent_that_keeps_asking_ends_after_a_bounded_number_of_questions(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = _paused(CITY)
    dialog = _dialog(sse_stub, "Paris", _paused(CITY))
    run = run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    assert len(sse_stub.requests) == P.MAX_RESUMES + 1
    assert run.content.endswith("Agent error: The agent kept asking questions; the answer stops here.\n")


def test_without_the_pipe_a_paused_run_is_an_ordinary_end(sse_stub: SSEStub) -> None:
    # the Recorder alone (no one to ask): the interrupt outcome ends the run as before
    recorder = P.Recorder(scrubber=P.Scrubber())
    for event in events(T("Hi"), _paused(CITY)):
        recorder.feed(event)
    assert recorder.finished and not recorder.paused


def test_a_declined_approval_for_a_call_that_never_streamed_adds_no_made_up_block(sse_stub: SSEStub) -> None:
    approval = {"id": "a1", "reason": "tool_call", "toolCallId": "ghost", "message": "Approve?"}
    sse_stub.behaviour.data = events(T("May I?"), _paused(approval))
    dialog = _dialog(sse_stub, False, events(T(" Fine, I will not."), FINISHED))
    run = run_pipe(make_pipe([_agui(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    assert dialog.questions[0]["data"]["title"] == "Allow a tool?"
    assert sse_stub.requests[1]["json"]["resume"][0]["payload"] == {"approved": False}
    assert run.content == "May I? Fine, I will not."
