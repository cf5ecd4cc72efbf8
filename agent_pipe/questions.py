"""Questions to the user: an AG-UI run that pauses (interrupt) and is resumed (the dialogs it asks
in, and how an answer is read: agent_pipe/dialogs.py)."""

import asyncio
import json
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from agent_pipe.constants import APPROVED, ASKED, MAX_EVENT_MB, MAX_RESUMES, MB
from agent_pipe.dialogs import (
    ADK_CONFIRMATION,
    _adk_confirmation,
    _mapping,
    client_answer,
    client_question,
    markdown_text,
    parse_answer,
    question_of,
    resume_entry,
    seconds_left,
    tells_the_agent,
)
from agent_pipe.file_store import RequestBody, encode_body
from agent_pipe.files import Attachment
from agent_pipe.helpers import _str, log, random_hex
from agent_pipe.history import _segments_to_agui
from agent_pipe.recorder import Recorder
from agent_pipe.segments import Error, ToolCall
from agent_pipe.transport import Batch, StatusLine, stream_run
from agent_pipe.valves import AgentSpec

# --- questions to the user: an AG-UI run that pauses (interrupt) and is resumed -----------------
# Agent Framework's tool approval (a tool with approval_mode="always_require") ends the run with
# RUN_FINISHED outcome {"type": "interrupt", "interrupts": [{id, reason: "tool_call", toolCallId,
# message, responseSchema: {approved…}}]}; it runs the tool when resumed with
# resume [{"interruptId", "status": "resolved", "payload": {"approved": true}}] and the paused
# run's messages. The pipe asks in the browser (__event_call__: a confirmation dialog for a tool,
# an input dialog for any other responseSchema) and resumes the same run within the same answer.


async def ask_user(event_call: Any, question: dict[str, Any], timeout: float) -> tuple[Any, str]:
    """The user's answer and how it went: "answered", "timed out" or "no browser"."""
    if event_call is None:
        return None, "no browser"
    if timeout <= 0:
        return None, "expired"
    try:
        async with asyncio.timeout(timeout):
            answer = await event_call(question)
    except TimeoutError:
        return None, "timed out"
    except Exception:  # the socket or the browser failed: the answer must not hang on it
        log.debug("aihub_agent_pipe: event call failed", exc_info=True)
        return None, "no browser"
    if isinstance(answer, Mapping) and answer.get("error"):
        return None, "no browser"
    return answer, "answered"


MAX_TRIES = 3  # an answer of the wrong kind is asked again, this many times in all


async def ask_checked(
    event_call: Any, question: dict[str, Any], schema: Mapping[str, Any], timeout: float
) -> tuple[Any, str]:
    """Ask, and for an input check the answer against the schema: a wrong one is asked again
    with why (within the same time), none or an empty one is no answer."""
    deadline = time.monotonic() + timeout
    for _ in range(MAX_TRIES):
        answer, how = await ask_user(event_call, question, deadline - time.monotonic())
        if question["type"] == "confirmation":
            if answer is None:
                return None, how if how != "answered" else "not answered"
            return answer is True, how
        if not isinstance(answer, str) or not answer.strip():
            return None, how if how != "answered" else "not answered"
        value, problem = parse_answer(schema, answer)
        if not problem:
            return value, how
        data = dict(question["data"])
        data["message"] = markdown_text(problem) + "\n\n" + question["data"]["message"].split("\n\n", 1)[-1]
        question = {**question, "data": data}
    return None, "not answered"


def unanswered_result(how: str, timeout: float) -> str:
    if how == "timed out":
        return f"Not run: nobody answered the question within {timeout:g} seconds."
    if how == "expired":
        return "Not run: the question expired before anyone answered."
    if how == "no browser":
        return "Not run: the agent asked for an answer, which only a chat in the browser can give."
    if how == "not answered":
        return "Not run: the question was not answered."
    return "Not run: the user declined."


@dataclass(frozen=True, kw_only=True)
class AgentRun:
    """One answer's run of the agent: where it goes, what it sends first, where its output goes,
    and how the user is asked when it pauses (``event_call``: Open WebUI's __event_call__)."""

    client: aiohttp.ClientSession
    agent: AgentSpec
    headers: dict[str, str]
    payload: dict[str, Any]
    recorder: Recorder
    batch: Batch
    status: StatusLine
    timeout: float
    event_call: Any
    question_timeout: float
    attachments: Sequence[Attachment] = ()
    max_event: int = MAX_EVENT_MB * MB


async def run_with_questions(run: AgentRun) -> AsyncGenerator[str, None]:
    """``stream_run``, and while the run pauses for the user: ask, then go on.

    A run that paused on interrupts is resumed: AG-UI 1.0's ``resume`` entries, or for LangGraph's
    CUSTOM on_interrupt ``forwardedProps.command.resume``. A run that left calls for the client
    goes on with a new run on the same thread, the answers as those calls' results; a call nobody
    answered is closed as not run. With ``attachments`` the body is encoded in a thread
    (megabytes of JSON; encode_body)."""
    recorder, status = run.recorder, run.status
    payload = run.payload
    recorder.outbound.asks = run.agent.transport == "agui"
    for _ in range(MAX_RESUMES + 1):
        sent: dict[str, Any] | RequestBody = payload
        if run.attachments:
            sent = await asyncio.to_thread(encode_body, payload, run.attachments)
        async for chunk in stream_run(
            run.client, run.agent, run.headers, sent, recorder, run.batch, status, run.timeout, run.max_event
        ):
            yield chunk
        if not recorder.paused:
            return
        if recorder.outbound.interrupts:
            payload = await _answer_interrupts(run, payload)
        else:
            answered = await _answer_client_calls(run, payload)
            if answered is None:  # nobody answered: the calls are closed as not run, the answer ends
                recorder.paused = recorder.finished = False
                recorder.finish()
                return
            payload = answered
    recorder.paused = recorder.finished = False  # it kept pausing: end the answer here
    recorder.finish(error="The agent kept asking questions; the answer stops here.")


def _turn(recorder: Recorder) -> list[dict[str, Any]]:
    return _segments_to_agui([s for s in recorder.segments if not isinstance(s, Error)], "aihub-resume")


async def _answer_interrupts(run: AgentRun, payload: dict[str, Any]) -> dict[str, Any]:
    """Ask each interrupt's question; the next request resumes the paused run with the answers."""
    recorder = run.recorder
    interrupts, recorder.outbound.interrupts = recorder.outbound.interrupts, []
    resume, unanswered, command = [], {}, None
    decisions: list[dict[str, Any]] = []  # HumanInTheLoopMiddleware's answers, one per action, in order
    for interrupt in interrupts:
        question = question_of(interrupt, recorder)
        timeout = run.question_timeout
        if (left := seconds_left(interrupt, time.time())) is not None:
            timeout = min(timeout, left)  # expiresAt bounds the wait
        await run.status.send({"description": ASKED, "done": False})
        answer, how = await ask_checked(run.event_call, question, _mapping(interrupt.get("responseSchema")), timeout)
        entry = resume_entry(interrupt, question, answer)
        call_id = _str(interrupt.get("toolCallId"))
        approved = _mapping(entry.get("payload")).get("approved")
        if interrupt.get("convention") == "hitl":  # never an approval unless the user said yes
            decisions.append(
                {"type": "approve"}
                if approved
                else {
                    "type": "reject",
                    "message": unanswered_result(how if answer is None else "declined", run.question_timeout),
                }
            )
        elif interrupt.get("convention") == "command" and entry["status"] == "resolved":
            command = entry["payload"]  # LangGraph: ag-ui-langgraph reads it as JSON text
        else:
            resume.append(entry)
        if call_id in recorder._calls and approved:
            recorder.outbound.approvals[call_id] = APPROVED
        elif call_id in recorder._calls and (entry["status"] == "cancelled" or approved is False):
            unanswered[call_id] = unanswered_result(how if answer is None else "declined", run.question_timeout)
    nxt = {key: value for key, value in payload.items() if key not in ("resume",)}
    nxt.update(runId=f"aihub-run-{random_hex()}", messages=list(run.payload["messages"]) + _turn(recorder))
    if resume:
        nxt["resume"] = resume
    forwarded = {k: v for k, v in _mapping(payload.get("forwardedProps")).items() if k != "command"}
    if decisions:
        command = {"decisions": decisions}
    if command is not None:
        forwarded["command"] = {"resume": json.dumps(command) if isinstance(command, str) else command}
    nxt["forwardedProps"] = forwarded
    recorder.paused = recorder.finished = False
    for call_id, result in unanswered.items():  # the tool did not run: its block says why
        recorder.tool_result(call_id, result)
    return nxt


def _settle_confirmed_call(recorder: Recorder, confirmation: ToolCall, not_run: str | None) -> None:
    """The block of the call an ADK confirmation is about shows what became of it, not ADK's interim
    result ("This tool call requires confirmation", or the tool's own while it waits for a payload):
    answered, the next run's result for it fills the block (the interim one if none comes); else why
    it did not run."""
    if confirmation.name != ADK_CONFIRMATION:
        return
    about, asked = _adk_confirmation(confirmation)
    original_id = _str(about.get("id"))
    if original_id not in recorder._calls or recorder._is_emitted(recorder._calls[original_id][0]):
        return
    original = recorder._calls[original_id][1]
    if not_run is not None:
        original.result = not_run
        return
    if original.result is not None:
        recorder.outbound.answered[original_id], original.result = original.result, None
    if asked.get("payload") is None:  # a yes to run it (not an answer to give)
        recorder.outbound.approvals[original_id] = APPROVED


async def _answer_client_calls(run: AgentRun, payload: dict[str, Any]) -> dict[str, Any] | None:
    """Ask about each call the run left to the client; the next request is a new run on the same
    thread whose last messages are the answers as those calls' results (client_answer: in the shape
    the framework reads), or None when no call has an answer to send. A result the next run streams
    for an accepted call fills its block; else the block shows the answer."""
    recorder = run.recorder
    framework = recorder.outbound.framework
    calls, recorder.outbound.client_calls = recorder.outbound.client_calls, []
    answers: dict[str, str] = {}  # call id -> the tool message's content
    closed: dict[str, str] = {}  # call id -> its result now: declined, or not run
    for call_id in calls:
        recorder.outbound.asked_calls.add(call_id)
        call = recorder._calls[call_id][1]
        question, schema = client_question(call, recorder)
        await run.status.send({"description": ASKED, "done": False})
        answer, how = await ask_checked(run.event_call, question, schema, run.question_timeout)
        if answer is None:
            closed[call_id] = unanswered_result(how, run.question_timeout)
            if tells_the_agent(call, framework):  # declined in the framework's shape, never approved
                answers[call_id] = client_answer(call, False, framework, why=closed[call_id])
        elif question["type"] == "confirmation" and answer is False:
            closed[call_id] = unanswered_result("declined", run.question_timeout)
            answers[call_id] = client_answer(call, False, framework, why=closed[call_id])
        elif question["type"] == "input":  # ADK's confirmation that asks for a payload: the answer is it
            answers[call_id] = client_answer(call, True, framework, value=answer)
            recorder.outbound.answered[call_id] = answers[call_id]  # shown if the next run streams no result
        else:
            answers[call_id] = client_answer(call, True, framework)
            recorder.outbound.approvals[call_id] = APPROVED
            recorder.outbound.answered[call_id] = answers[call_id]
    recorder.paused = recorder.finished = False
    turn = _turn(recorder)  # before the answers fill the calls: the tool messages go last, in the calls' order
    for call_id, result in closed.items():
        recorder.tool_result(call_id, result)
    for call_id in calls:
        _settle_confirmed_call(recorder, recorder._calls[call_id][1], closed.get(call_id))
    if not answers:
        return None
    told = {**closed, **answers}  # the agent hears of every call
    tools = [
        {"id": f"aihub-answer-{n}", "role": "tool", "toolCallId": call_id, "content": told[call_id]}
        for n, call_id in enumerate(c for c in calls if c in told)
    ]
    nxt = {key: value for key, value in payload.items() if key != "resume"}
    nxt.update(runId=f"aihub-run-{random_hex()}", messages=list(run.payload["messages"]) + turn + tools)
    nxt["forwardedProps"] = {k: v for k, v in _mapping(payload.get("forwardedProps")).items() if k != "command"}
    return nxt
