"""Questions to the user: an AG-UI run that pauses (interrupt) and is resumed."""

import asyncio
import re
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from agent_pipe.constants import APPROVED, ASKED, MAX_EVENT_MB, MAX_RESUMES, MB
from agent_pipe.file_store import RequestBody, encode_body
from agent_pipe.files import Attachment
from agent_pipe.helpers import _json_or_none, _str, log, random_hex
from agent_pipe.history import _segments_to_agui
from agent_pipe.recorder import Recorder
from agent_pipe.segments import Error
from agent_pipe.transport import Batch, StatusLine, stream_run
from agent_pipe.valves import AgentSpec

# --- questions to the user: an AG-UI run that pauses (interrupt) and is resumed -----------------
# Agent Framework's tool approval (a tool with approval_mode="always_require") ends the run with
# RUN_FINISHED outcome {"type": "interrupt", "interrupts": [{id, reason: "tool_call", toolCallId,
# message, responseSchema: {approved…}}]}; it runs the tool when resumed with
# resume [{"interruptId", "status": "resolved", "payload": {"approved": true}}] and the paused
# run's messages. The pipe asks in the browser (__event_call__: a confirmation dialog for a tool,
# an input dialog for any other responseSchema) and resumes the same run within the same answer.


# Open WebUI's dialog renders its message as Markdown (0.12.4 ConfirmDialog:
# DOMPurify.sanitize(marked.parse(message))): what the agent wrote must not become a link, a
# remote image (which would tell the image's host the user's address), emphasis or HTML there.
_MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
_BACKTICKS = re.compile(r"`+")


def markdown_text(text: str) -> str:
    """Text Markdown shows as written: every ASCII punctuation character backslash-escaped
    (CommonMark allows it for each), so no link, image, emphasis, list, heading or tag forms."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", text)


def _fence(text: str, minimum: int) -> str:
    """Backticks longer than any run of them in ``text``: the code it opens cannot be closed early."""
    return "`" * max(minimum, 1 + max((len(run) for run in _BACKTICKS.findall(text)), default=0))


def markdown_code(text: str) -> str:
    """One line as a code span (whitespace folded: a blank line would end the span)."""
    line = " ".join(text.split())
    fence = _fence(line, 1)
    return f"{fence} {line} {fence}"


def markdown_block(text: str) -> str:
    """Any text as a fenced code block: its lines shown as they are, nothing in them markup."""
    fence = _fence(text, 3)
    return f"{fence}\n{text}\n{fence}"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def question_of(interrupt: Mapping[str, Any], recorder: Recorder) -> dict[str, Any]:
    """The dialog for an interrupt: a confirmation for a tool call, else an input (keys masked).

    The confirmation always starts by naming the tool, whatever the agent's own message says; the
    message follows as plain text and the arguments as a code block, so nothing the agent sent
    becomes markup in the dialog."""
    redact = recorder.scrubber.redact
    call = recorder._calls.get(_str(interrupt.get("toolCallId")))
    schema = _mapping(interrupt.get("responseSchema"))
    properties = _mapping(schema.get("properties"))
    message = redact(_str(interrupt.get("message")))
    if call is not None or interrupt.get("reason") == "tool_call" or "approved" in properties:
        name = " ".join(redact(call[1].name).split()) if call else ""
        arguments = redact(call[1].arguments) if call else ""
        text = f"The agent wants to run {markdown_code(name)}." if name else "The agent wants to run a tool."
        if message.strip():
            text += "\n\n" + markdown_text(message)
        if arguments:
            text += "\n\nArguments:\n\n" + markdown_block(arguments)
        title = f"Allow {name[:80] or 'a tool'}?"
        return {"type": "confirmation", "data": {"title": title, "message": text}}
    return {"type": "input", "data": {"title": "The agent asks", "message": markdown_text(message),
                                       "placeholder": "Your answer"}}


def resume_entry(interrupt: Mapping[str, Any], question: Mapping[str, Any], answer: Any) -> dict[str, Any]:
    """The AG-UI ``resume`` entry for the user's answer (None: no answer). A tool nobody approved
    is declined (``approved: false``), so the agent goes on knowing it did not run (Agent Framework
    1.0.0rc8 ends a run whose approval is "cancelled" in an error); other unanswered questions are
    "cancelled"."""
    entry: dict[str, Any] = {"interruptId": _str(interrupt.get("id"))}
    if question["type"] == "confirmation":
        return {**entry, "status": "resolved", "payload": {"approved": answer is True}}
    if not isinstance(answer, str) or not answer:
        return {**entry, "status": "cancelled"}
    properties = list(_mapping(_mapping(interrupt.get("responseSchema")).get("properties")))
    payload: Any = {properties[0]: answer} if len(properties) == 1 else _json_or_none(answer)
    return {**entry, "status": "resolved", "payload": payload if payload is not None else answer}


async def ask_user(event_call: Any, question: dict[str, Any], timeout: float) -> tuple[Any, str]:
    """The user's answer and how it went: "answered", "timed out" or "no browser"."""
    if event_call is None:
        return None, "no browser"
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


def unanswered_result(how: str, timeout: float) -> str:
    if how == "timed out":
        return f"Not run: nobody answered the question within {timeout:g} seconds."
    if how == "no browser":
        return "Not run: the agent asked for an answer, which only a chat in the browser can give."
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
    """``stream_run``, and while the run pauses for the user: ask, then resume the same run.

    With ``attachments`` the body is encoded in a thread (megabytes of JSON; encode_body)."""
    recorder, status, event_call, question_timeout = run.recorder, run.status, run.event_call, run.question_timeout
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
        interrupts, recorder.outbound.interrupts = recorder.outbound.interrupts, []
        history = list(payload["messages"])
        resume, unanswered = [], {}
        for interrupt in interrupts:
            question = question_of(interrupt, recorder)
            await status.send({"description": ASKED, "done": False})
            answer, how = await ask_user(event_call, question, question_timeout)
            entry = resume_entry(interrupt, question, answer)
            resume.append(entry)
            call_id = _str(interrupt.get("toolCallId"))
            if call_id in recorder._calls and (entry.get("payload") or {}).get("approved"):
                recorder.outbound.approvals[call_id] = APPROVED
            elif call_id in recorder._calls:
                unanswered[call_id] = unanswered_result(how, question_timeout)
        turn = _segments_to_agui([s for s in recorder.segments if not isinstance(s, Error)], "aihub-resume")
        payload = {**payload, "runId": f"aihub-run-{random_hex()}", "messages": history + turn, "resume": resume}
        recorder.paused = recorder.finished = False
        for call_id, result in unanswered.items():  # the tool did not run: its block says why
            recorder.tool_result(call_id, result)
    recorder.paused = recorder.finished = False  # it kept pausing: end the answer here
    recorder.finish(error="The agent kept asking questions; the answer stops here.")
