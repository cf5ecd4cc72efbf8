"""Every way a framework asks the user (issue 32, item 2), through pipe() against a loopback server
that plays the frameworks' own captured streams (tests/data/agui_captures): the dialog Open WebUI
shows, the request that goes on, and that no block is left "Executing..."."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.support.pipe_support import FINISHED, C, SSEStub, T, events, make_pipe, pipe_module, run_pipe
from tests.support.pipe_support import R as R_

P = pipe_module
CAPTURES = Path(__file__).resolve().parents[1] / "data" / "agui_captures"
HISTORY = [{"role": "user", "content": "q"}]


def _agent(url: str) -> dict[str, Any]:
    return {"id": "lab.helper", "name": "Helper", "transport": "agui", "url": url}


def capture(name: str) -> bytes:
    return (CAPTURES / name).read_bytes()


class Dialog:
    """Open WebUI's __event_call__: answers in turn, and what the agent streams after each answer."""

    def __init__(
        self, stub: SSEStub, answers: list[Any], then: bytes | list[dict[str, Any]] | None = None, delay: float = 0
    ) -> None:
        self.stub, self.answers, self.then, self.delay = stub, list(answers), then, delay
        self.questions: list[dict[str, Any]] = []

    async def __call__(self, question: dict[str, Any]) -> Any:
        import asyncio

        self.questions.append(question)
        if isinstance(self.then, bytes):
            self.stub.behaviour.raw, self.stub.behaviour.data = self.then, []
        elif self.then is not None:
            self.stub.behaviour.raw, self.stub.behaviour.data = None, self.then
        await asyncio.sleep(self.delay)
        return self.answers.pop(0) if self.answers else None


def _play(stub: SSEStub, body: bytes) -> None:
    stub.behaviour.raw, stub.behaviour.data = body, []


def _calls(content: str) -> list[Any]:
    return [c for s in P.parse_content(content) if isinstance(s, P.ToolStep) for c in s.calls]


# --- LangGraph's CUSTOM on_interrupt: forwardedProps.command.resume ---------------------------------


def test_langgraphs_on_interrupt_asks_and_resumes_through_command_resume(sse_stub: SSEStub) -> None:
    _play(sse_stub, capture("langgraph/ask.sse"))
    dialog = Dialog(sse_stub, ["12 Rue de Rivoli, Paris"], capture("langgraph/ask.resume-answered.sse"))
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    (question,) = dialog.questions
    assert question["type"] == "input" and question["data"]["message"] == P.markdown_text(
        "Which address should the parcel go to?"
    )
    first, resumed = (r["json"] for r in sse_stub.requests)
    assert resumed["threadId"] == first["threadId"] and "resume" not in resumed
    # JSON text: ag-ui-langgraph parses a string resume as JSON, so the tool gets exactly the answer
    assert resumed["forwardedProps"]["command"] == {"resume": json.dumps("12 Rue de Rivoli, Paris")}
    (call,) = _calls(run.content)
    assert (call.name, call.arguments, call.result) == (
        "ask_address",
        '{"order": "10023"}',
        "shipping to 12 Rue de Rivoli, Paris",
    )
    assert "Executing..." not in run.content and "Agent error" not in run.content


def test_an_unanswered_on_interrupt_is_a_cancelled_resume_of_langgraphs_interrupt(sse_stub: SSEStub) -> None:
    _play(sse_stub, capture("langgraph/ask.sse"))
    dialog = Dialog(sse_stub, [None], events(T("Fine."), FINISHED))
    run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    resumed = sse_stub.requests[1]["json"]
    interrupt_id = json.loads(
        next(line[5:] for line in capture("langgraph/ask.sse").decode().splitlines() if '"on_interrupt"' in line)
    )["rawEvent"]["id"]
    assert resumed["resume"] == [{"interruptId": interrupt_id, "status": "cancelled"}]
    assert "command" not in resumed["forwardedProps"]


def test_crewais_on_interrupt_is_an_interrupt_answered_by_a_checked_resume(sse_stub: SSEStub) -> None:
    interrupt = {
        "id": "thread-1",
        "reason": "crewai:human_feedback",
        "message": "Ship it?",
        "responseSchema": {"type": "string", "enum": ["approve", "reject"]},
    }
    sse_stub.behaviour.data = events(
        T("Reviewing."), [{"type": "CUSTOM", "name": "on_interrupt", "value": interrupt}], FINISHED
    )
    dialog = Dialog(sse_stub, ["maybe", "approve"], events(T(" Shipped."), FINISHED))
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    first, again = dialog.questions  # a wrong answer is asked again, with why
    assert first["data"]["placeholder"] == "One of: approve, reject"
    assert again["data"]["message"] == P.markdown_text(
        "The answer must be one of: approve, reject."
    ) + "\n\n" + P.markdown_text("Ship it?")
    assert sse_stub.requests[1]["json"]["resume"] == [
        {"interruptId": "thread-1", "status": "resolved", "payload": "approve"}
    ]
    assert run.content == "Reviewing. Shipped."


def test_crewais_feedback_shows_the_output_the_user_reviews(sse_stub: SSEStub) -> None:
    """@human_feedback asks about its method's output (CrewAI's console shows it): without it the
    user approves "this order" without being told which (tests/functions/test_framework_matrix.py)."""
    interrupt = {
        "id": "thread-1",
        "reason": "crewai:human_feedback",
        "message": "Do you approve cancelling this order?",
        "metadata": {"crewai": {"flowId": "thread-1", "methodName": "approve_cancel", "output": "Cancel order 10023"}},
    }
    sse_stub.behaviour.data = events([{"type": "CUSTOM", "name": "on_interrupt", "value": interrupt}], FINISHED)
    dialog = Dialog(sse_stub, ["approved"], events(T("Cancelled."), FINISHED))
    run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    assert dialog.questions[0]["data"]["message"] == P.markdown_text(
        "Do you approve cancelling this order?\n\nCancel order 10023"
    )


# --- Strands and Pydantic AI: AG-UI 1.0 interrupts --------------------------------------------------


def test_strands_native_interrupt_asks_the_question_in_its_metadata(sse_stub: SSEStub) -> None:
    _play(sse_stub, capture("strands/ask.sse"))
    dialog = Dialog(sse_stub, ["12 Rue de Rivoli, Paris"], capture("strands/ask.resume-answered.sse"))
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    assert dialog.questions[0]["data"]["message"] == P.markdown_text("Which address should the parcel go to?")
    (entry,) = sse_stub.requests[1]["json"]["resume"]
    assert (entry["status"], entry["payload"]) == ("resolved", "12 Rue de Rivoli, Paris")  # Strands wraps it itself
    assert "Executing..." not in run.content


@pytest.mark.parametrize("capture_name", ["pydantic_ai/approve.sse", "strands/approve.sse"])
def test_an_approval_nobody_answers_is_cancelled_never_approved_and_says_why(
    sse_stub: SSEStub, capture_name: str
) -> None:
    _play(sse_stub, capture(capture_name))
    dialog = Dialog(sse_stub, [None], events(T("Not cancelled."), FINISHED))
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    assert dialog.questions[0]["type"] == "confirmation"
    assert dialog.questions[0]["data"]["title"] == "Allow cancel_order?"
    (entry,) = sse_stub.requests[1]["json"]["resume"]
    assert entry["status"] == "cancelled" and "payload" not in entry
    (call,) = _calls(run.content)
    assert call.result == "Not run: the question was not answered."
    assert run.content.endswith("Not cancelled.")


def test_a_declined_pydantic_ai_approval_is_resolved_not_approved(sse_stub: SSEStub) -> None:
    _play(sse_stub, capture("pydantic_ai/approve.sse"))
    dialog = Dialog(sse_stub, [False], capture("pydantic_ai/approve.resume-declined.sse"))
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    (entry,) = sse_stub.requests[1]["json"]["resume"]
    assert entry == {"interruptId": entry["interruptId"], "status": "resolved", "payload": {"approved": False}}
    assert entry["interruptId"].startswith("int-call_")
    assert _calls(run.content)[0].result == "Not run: the user declined."


# --- expiresAt and checked answers ---------------------------------------------------------------------


def _interrupt(**fields: Any) -> list[dict[str, Any]]:
    return [
        {**FINISHED[0], "outcome": {"type": "interrupt", "interrupts": [{"id": "i1", "reason": "input", **fields}]}}
    ]


def test_an_expired_question_is_not_asked_and_is_cancelled(sse_stub: SSEStub) -> None:
    past = (datetime.now(UTC) - timedelta(seconds=5)).isoformat()
    sse_stub.behaviour.data = events(T("Asking."), _interrupt(message="Which city?", expiresAt=past))
    dialog = Dialog(sse_stub, ["Paris"], events(T(" Too late."), FINISHED))
    sse_stub.behaviour.data = events(T("Asking."), _interrupt(message="Which city?", expiresAt=past))
    run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    assert dialog.questions == []
    assert sse_stub.requests[1]["json"]["resume"] == [{"interruptId": "i1", "status": "cancelled"}]


def test_expires_at_bounds_how_long_the_dialog_waits(sse_stub: SSEStub) -> None:
    soon = (datetime.now(UTC) + timedelta(seconds=1)).isoformat().replace("+00:00", "Z")
    sse_stub.behaviour.data = events(_interrupt(message="Which city?", expiresAt=soon))
    dialog = Dialog(sse_stub, ["Paris"], events(T("Guessing."), FINISHED), delay=5)
    start = time.monotonic()
    run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)  # valve: 120 s
    assert time.monotonic() - start < 3
    assert sse_stub.requests[1]["json"]["resume"][0]["status"] == "cancelled"


@pytest.mark.parametrize(
    ("schema", "answers", "payload"),
    [
        ({"type": "integer"}, ["twelve", "12"], 12),
        ({"type": "number"}, ["1.5"], 1.5),
        ({"type": "object", "properties": {"count": {"type": "integer"}}}, ["x", "3"], {"count": 3}),
        ({"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a"]}, ['{"b": 1}', '{"a": 1}'], {"a": 1}),
        ({"type": "array"}, ["[1, 2]"], [1, 2]),
        ({"type": "string"}, ["  spaced  "], "  spaced  "),
    ],
)
def test_an_answer_is_checked_against_the_schema_before_it_goes_back(
    sse_stub: SSEStub, schema: dict[str, Any], answers: list[str], payload: Any
) -> None:
    sse_stub.behaviour.data = events(_interrupt(message="How many?", responseSchema=schema))
    dialog = Dialog(sse_stub, answers, events(T("OK."), FINISHED))
    run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    assert len(dialog.questions) == len(answers)
    assert sse_stub.requests[1]["json"]["resume"][0]["payload"] == payload


def test_three_wrong_answers_are_no_answer(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(_interrupt(message="How many?", responseSchema={"type": "integer"}))
    dialog = Dialog(sse_stub, ["a", "b", "c", "4"], events(T("OK."), FINISHED))
    run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    assert len(dialog.questions) == 3
    assert sse_stub.requests[1]["json"]["resume"][0]["status"] == "cancelled"


def test_a_yes_or_no_question_is_a_confirmation_answered_as_a_boolean(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = events(_interrupt(message="Proceed?", responseSchema={"type": "boolean"}))
    dialog = Dialog(sse_stub, [True], events(T("OK."), FINISHED))
    run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    assert dialog.questions[0]["type"] == "confirmation"
    assert sse_stub.requests[1]["json"]["resume"][0]["payload"] is True


# --- calls the run left for the client -------------------------------------------------------------------


@pytest.mark.parametrize(
    "capture_name", ["pydantic_ai/client", "adk/client", "llamaindex/client", "agent_framework/client"]
)
def test_a_call_left_to_the_client_is_asked_and_answered_by_a_new_run_with_the_answer(
    sse_stub: SSEStub, capture_name: str
) -> None:
    # Pydantic AI names it in outcome.pendingToolCallIds; ADK and LlamaIndex just end the run
    _play(sse_stub, capture(f"{capture_name}.sse"))
    then = CAPTURES / f"{capture_name}.resume-approved.sse"
    dialog = Dialog(sse_stub, [True], then.read_bytes() if then.exists() else events(T("Shipped."), FINISHED))
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    (question,) = dialog.questions
    assert question["type"] == "confirmation" and question["data"]["title"] == "Allow confirm_shipment?"
    assert "10023" in question["data"]["message"]
    first, nxt = (r["json"] for r in sse_stub.requests)
    assert nxt["threadId"] == first["threadId"] and nxt["runId"] != first["runId"] and "resume" not in nxt
    assert nxt["messages"][-2]["toolCalls"][0]["id"] == nxt["messages"][-1]["toolCallId"]
    assert nxt["messages"][-1]["role"] == "tool" and nxt["messages"][-1]["content"] == "The user accepted this call."
    (call, *_) = _calls(run.content)
    assert call.result == "[approved by the user] The user accepted this call."  # no run streamed another result
    assert "Executing..." not in run.content and "Agent error" not in run.content


@pytest.mark.parametrize("capture_name", ["adk/client.sse", "llamaindex/client.sse", "pydantic_ai/client.sse"])
def test_a_call_left_to_the_client_that_nobody_answers_is_closed_as_not_run(
    sse_stub: SSEStub, capture_name: str
) -> None:
    _play(sse_stub, capture(capture_name))
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY)  # an API client: no browser
    assert len(sse_stub.requests) == 1  # no new run
    (call,) = _calls(run.content)
    assert call.result == "Not run: the agent asked for an answer, which only a chat in the browser can give."
    assert "Executing..." not in run.content and 'done="false"' not in run.content


def test_agnos_confirmation_is_a_yes_or_no_sent_as_accepted(sse_stub: SSEStub) -> None:
    _play(sse_stub, capture("agno/approve.sse"))
    dialog = Dialog(sse_stub, [True], capture("agno/approve.resume-approved.sse"))
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    (question,) = dialog.questions
    assert question["type"] == "confirmation" and question["data"]["title"] == "Allow cancel_order?"
    nxt = sse_stub.requests[1]["json"]
    assert nxt["messages"][-1]["role"] == "tool"
    assert json.loads(nxt["messages"][-1]["content"]) == {"accepted": True, "values": {}}
    (call,) = _calls(run.content)
    assert call.result == "[approved by the user] order 10023 cancelled"
    assert run.content.endswith("The cancel tool said: order 10023 cancelled")


def test_agnos_declined_confirmation_goes_on_and_its_block_says_so(sse_stub: SSEStub) -> None:
    _play(sse_stub, capture("agno/approve.sse"))
    dialog = Dialog(sse_stub, [False], capture("agno/approve.resume-declined.sse"))
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    assert json.loads(sse_stub.requests[1]["json"]["messages"][-1]["content"]) == {
        "accepted": False,
        "values": {},
        "note": "Not run: the user declined.",
    }
    assert _calls(run.content)[0].result == "Not run: the user declined."
    assert "Executing..." not in run.content


def test_nobody_answering_agnos_paused_call_tells_agno_no_in_a_new_run(sse_stub: SSEStub) -> None:
    # Agno holds the paused run in its database until a tool message answers it; nobody answering
    # is a "no" with why (never an approval), and no values (the pause may be a requires_user_input)
    _play(sse_stub, capture("agno/approve.sse"))
    then = capture("agno/approve.resume-declined.sse")
    dialog = Dialog(sse_stub, [], then, delay=2)
    pipe = make_pipe([_agent(sse_stub.url)])
    pipe.valves.QUESTION_TIMEOUT_SECONDS = 0.5
    run = run_pipe(pipe, "lab.helper", HISTORY, event_call=dialog)
    first, nxt = (r["json"] for r in sse_stub.requests)
    assert nxt["threadId"] == first["threadId"] and "resume" not in nxt
    told = nxt["messages"][-1]
    assert told["role"] == "tool" and told["toolCallId"] == _calls(run.content)[0].id
    why = "Not run: nobody answered the question within 0.5 seconds."
    assert json.loads(told["content"]) == {"accepted": False, "values": {}, "note": why}
    assert _calls(run.content)[0].result == why
    assert run.content.endswith("The cancel tool said: Function call was rejected by the user")


def test_an_unanswered_adk_confirmation_is_told_no_in_a_new_run(sse_stub: SSEStub) -> None:
    _play(sse_stub, capture("adk/approve.sse"))
    dialog = Dialog(sse_stub, [None], capture("adk/approve.resume-declined.sse"))  # the dialog closed, no answer
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    first, nxt = (r["json"] for r in sse_stub.requests)
    told = nxt["messages"][-1]
    assert nxt["threadId"] == first["threadId"] and "resume" not in nxt
    assert told["role"] == "tool" and json.loads(told["content"]) == {"confirmed": False}  # never an approval
    (confirmation,) = [c for c in _calls(run.content) if c.name == "adk_request_confirmation"]
    assert told["toolCallId"] == confirmation.id
    assert confirmation.result == "Not run: the question was not answered."
    (cancel,) = [c for c in _calls(run.content) if c.name == "cancel_order"]
    assert cancel.result == "Not run: the question was not answered."
    assert "Executing..." not in run.content and 'done="false"' not in run.content and "Agent error" not in run.content


def test_adks_confirmation_with_a_payload_is_its_hint_asked_and_answered_in_the_payloads_shape(
    sse_stub: SSEStub,
) -> None:
    # tool_context.request_confirmation(hint=<question>, payload={"address": ""}): ADK's way to ask for input
    _play(sse_stub, capture("adk/ask.sse"))
    dialog = Dialog(sse_stub, ["12 Rue de Rivoli, Paris"], capture("adk/ask.resume-answered.sse"))
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    (question,) = dialog.questions
    assert question["type"] == "input"
    assert question["data"]["message"] == P.markdown_text("Which address should the parcel go to?")
    nxt = sse_stub.requests[1]["json"]
    told = nxt["messages"][-1]
    assert told["role"] == "tool" and "resume" not in nxt
    assert json.loads(told["content"]) == {"confirmed": True, "payload": {"address": "12 Rue de Rivoli, Paris"}}
    (confirmation,) = [c for c in _calls(run.content) if c.name == "adk_request_confirmation"]
    assert told["toolCallId"] == confirmation.id
    (asked,) = [c for c in _calls(run.content) if c.name == "ask_address"]
    assert asked.result == "12 Rue de Rivoli, Paris"  # the tool's result once answered, not its "waiting for ..."
    assert "You answered: {'result': '12 Rue de Rivoli, Paris'}" in run.content
    assert "Executing..." not in run.content and "Agent error" not in run.content


@pytest.mark.parametrize(
    ("payload", "typed", "sent"),
    [
        ({"days": 0}, ["two", "2"], {"days": 2}),  # a wrong kind is asked again, with why
        ({"city": "", "zip": ""}, ['{"city": "Paris", "zip": "75001"}'], {"city": "Paris", "zip": "75001"}),
        (0, ["3"], 3),
    ],
)
def test_adks_confirmation_payload_is_the_answers_shape(
    sse_stub: SSEStub, payload: Any, typed: list[str], sent: Any
) -> None:
    arguments = {
        "originalFunctionCall": {"id": "c0", "args": {}, "name": "request_time_off"},
        "toolConfirmation": {"hint": "How many days?", "confirmed": False, "payload": payload},
    }
    sse_stub.behaviour.data = events(T("Asking."), C("c1", "adk_request_confirmation", json.dumps(arguments)), FINISHED)
    dialog = Dialog(sse_stub, typed, events(T("OK."), FINISHED))
    run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    assert len(dialog.questions) == len(typed) and dialog.questions[0]["type"] == "input"
    assert json.loads(sse_stub.requests[1]["json"]["messages"][-1]["content"]) == {"confirmed": True, "payload": sent}


# --- AG-UI 1.0's outcome cancelled ---------------------------------------------------------------------


def test_a_cancelled_run_closes_its_open_calls_as_not_run(sse_stub: SSEStub) -> None:
    cancelled = [{**FINISHED[0], "outcome": {"type": "cancelled"}}]
    sse_stub.behaviour.data = events(T("Starting."), C("c1"), cancelled)
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY)
    assert _calls(run.content)[0].result == "Not run: the agent's run was cancelled."
    assert "The agent cancelled the run" in run.statuses and "Agent error" not in run.content


def test_a_cancelled_run_with_nothing_to_show_says_so(sse_stub: SSEStub) -> None:
    sse_stub.behaviour.data = [{**FINISHED[0], "outcome": {"type": "cancelled"}}]
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY)
    assert run.content == "*The agent cancelled the run.*"


# --- LangChain's HumanInTheLoopMiddleware through ag-ui-langgraph ----------------------------------


@pytest.mark.parametrize(
    ("answer", "decision", "then"),
    [
        (True, {"type": "approve"}, "langgraph/approve.resume-approved.sse"),
        (False, {"type": "reject", "message": "Not run: the user declined."}, "langgraph/approve.resume-declined.sse"),
        (
            None,
            {"type": "reject", "message": "Not run: the question was not answered."},
            "langgraph/approve.resume-declined.sse",
        ),
    ],
)
def test_langchains_hitl_request_is_an_approval_answered_with_decisions(
    sse_stub: SSEStub, answer: Any, decision: dict[str, Any], then: str
) -> None:
    _play(sse_stub, capture("langgraph/approve.sse"))
    dialog = Dialog(sse_stub, [answer], capture(then))
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    (question,) = dialog.questions
    assert question["type"] == "confirmation" and question["data"]["title"] == "Allow cancel_order?"
    assert "10023" in question["data"]["message"]
    resumed = sse_stub.requests[1]["json"]
    assert resumed["forwardedProps"]["command"] == {"resume": {"decisions": [decision]}} and "resume" not in resumed
    call = _calls(run.content)[0]  # (the declined capture was recorded on a thread of its own: its call has another id)
    assert call.result.startswith("[approved by the user] ") if answer else call.result == decision["message"]
    assert "Executing..." not in run.content and "Agent error" not in run.content


def test_an_input_required_interrupt_is_a_question_with_its_schema(sse_stub: SSEStub) -> None:
    # AG-UI 1.0's interrupt for a question, in Pydantic AI's id shape (pydantic-ai-slim 2.68.0 itself
    # sends only tool_call approvals as interrupts: its CallDeferred questions are pendingToolCallIds)
    schema = {"type": "object", "properties": {"address": {"type": "string"}}, "required": ["address"]}
    sse_stub.behaviour.data = events(
        C("call_1", "ship"),
        [
            {
                **FINISHED[0],
                "outcome": {
                    "type": "interrupt",
                    "interrupts": [
                        {
                            "id": "int-call_1",
                            "reason": "input_required",
                            "message": "Where to?",
                            "responseSchema": schema,
                        }
                    ],
                },
            }
        ],
    )
    dialog = Dialog(sse_stub, ["12 Rue de Rivoli"], events(R_("call_1", "shipped"), T("Done."), FINISHED))
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    assert dialog.questions[0]["type"] == "input" and dialog.questions[0]["data"]["message"] == P.markdown_text(
        "Where to?"
    )
    assert sse_stub.requests[1]["json"]["resume"] == [
        {"interruptId": "int-call_1", "status": "resolved", "payload": {"address": "12 Rue de Rivoli"}}
    ]
    assert _calls(run.content)[0].result == "shipped" and run.content.endswith("Done.")


def test_every_event_these_tests_make_is_ag_ui_1_0() -> None:
    from tests.support.agui_schema import NotAnAgUiEvent, check_event

    check_event({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "cancelled"}})
    with pytest.raises(NotAnAgUiEvent):  # the schema is really applied: a 1.0 outcome needs its interrupts
        check_event({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "interrupt"}})
    with pytest.raises(NotAnAgUiEvent):
        check_event({"type": "TOOL_CALL_RESULT", "toolCallId": "c1", "content": "x"})  # no messageId


@pytest.mark.parametrize(
    ("answer", "then"), [(True, "adk/approve.resume-approved.sse"), (False, "adk/approve.resume-declined.sse")]
)
def test_adks_tool_confirmation_asks_about_the_call_it_confirms_and_answers_confirmed(
    sse_stub: SSEStub, answer: bool, then: str
) -> None:
    _play(sse_stub, capture("adk/approve.sse"))  # cancel_order, then adk_request_confirmation left for the client
    dialog = Dialog(sse_stub, [answer], capture(then))
    run = run_pipe(make_pipe([_agent(sse_stub.url)]), "lab.helper", HISTORY, event_call=dialog)
    (question,) = dialog.questions
    assert question["type"] == "confirmation" and question["data"]["title"] == "Allow cancel_order?"
    assert "10023" in question["data"]["message"]
    last = sse_stub.requests[1]["json"]["messages"][-1]
    assert last["role"] == "tool" and json.loads(last["content"]) == {"confirmed": answer}
    assert "Executing..." not in run.content and "Agent error" not in run.content
    # the confirmed call's block shows what became of it, not ADK's "This tool call requires confirmation"
    (cancel,) = [c for c in _calls(run.content) if c.name == "cancel_order"]
    assert cancel.result == (
        "[approved by the user] order 10023 cancelled" if answer else "Not run: the user declined."
    )
