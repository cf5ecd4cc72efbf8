"""How the Recorder takes each AG-UI event: the handler of each event type (what the event means
for the Recorder's recording rules: a delta, a call, a result, a snapshot reconciled with what
streamed, the run's end), the table that picks it, and which events a subagent owns.

After the recorder in the build: the handlers take a Recorder, and Recorder.feed looks the table
up only when it runs.
"""

from collections.abc import Callable, Mapping
from typing import Any

from agent_pipe.constants import CALLS_RAN, USAGE
from agent_pipe.helpers import _is_json, _parts_concatenated, _str
from agent_pipe.recorder import Recorder
from agent_pipe.results import _image_of, result_text
from agent_pipe.segments import Subagent, Text

# === dispatch =====================================================================================


# Events that belong to a subagent when they carry its subagentRunId (or are a later event of its call)
_SUBAGENT_CONTENT = frozenset(
    {
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TEXT_MESSAGE_CHUNK",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_CHUNK",
        "TOOL_CALL_RESULT",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_MESSAGE_CHUNK",
        "REASONING_END",
        "STEP_STARTED",
        "ACTIVITY_SNAPSHOT",
        "ACTIVITY_DELTA",
        "CUSTOM",
    }
)

# --- the handlers: what each event means for the recording rules ----------------------------------


def _on_subagent_started(recorder: Recorder, e: Mapping[str, Any]) -> None:
    run_id = _str(e.get("subagentRunId"))
    if run_id and run_id not in recorder._subagents:
        recorder._start_subagent(run_id, _str(e.get("name")) or "subagent")
        recorder.statuses.append({"description": f"{_str(e.get('name')) or 'A subagent'} is working…", "done": False})


def _on_subagent_end(recorder: Recorder, e: Mapping[str, Any]) -> None:
    child = recorder._subagents.pop(_str(e.get("subagentRunId")), None)
    if child is None:
        return
    if e.get("type") == "SUBAGENT_ERROR":
        message, code = _str(e.get("message")) or "The subagent failed.", _str(e.get("code"))
        child.finish(error=f"{message} ({code})" if code else message)
        for segment in recorder.segments:
            if isinstance(segment, Subagent) and recorder._subagent_blocks.get(id(segment)) is child:
                segment.failed = True
    else:
        child.end_subagent()
    child.statuses = []


def _on_text_start(recorder: Recorder, e: Mapping[str, Any]) -> None:
    message_id = _str(e.get("messageId"))
    if message_id:
        recorder._roles[message_id] = _str(e.get("role")) or "assistant"


def _on_text_content(recorder: Recorder, e: Mapping[str, Any]) -> None:
    message_id = _str(e.get("messageId"))
    if message_id and e.get("role"):
        recorder._roles.setdefault(message_id, _str(e.get("role")))
    recorder.text(_str(e.get("delta")), message_id)


def _on_tool_start(recorder: Recorder, e: Mapping[str, Any]) -> None:
    recorder.agent_messages.call(_str(e.get("toolCallId")), _str(e.get("parentMessageId")))
    recorder.tool_call(_str(e.get("toolCallId")), _str(e.get("toolCallName")), _str(e.get("parentMessageId")))


def _on_tool_args(recorder: Recorder, e: Mapping[str, Any]) -> None:
    recorder.tool_args(_str(e.get("toolCallId")), _str(e.get("delta")))


def _on_tool_chunk(recorder: Recorder, e: Mapping[str, Any]) -> None:
    call_id = _str(e.get("toolCallId")) or recorder._last_chunk_call or ""
    if call_id and call_id not in recorder._calls and e.get("toolCallName"):
        recorder.agent_messages.call(call_id, _str(e.get("parentMessageId")))
        recorder.tool_call(call_id, _str(e.get("toolCallName")), _str(e.get("parentMessageId")))
    if call_id:
        recorder._last_chunk_call = call_id
        recorder.tool_args(call_id, _str(e.get("delta")))


def _on_tool_result(recorder: Recorder, e: Mapping[str, Any]) -> None:
    content = e.get("content")
    recorder.agent_messages.result(_str(e.get("toolCallId")), _str(e.get("messageId")))
    recorder.tool_result(_str(e.get("toolCallId")), result_text(content), _str(e.get("messageId")))
    if isinstance(content, list):  # AG-UI 1.0: a result's image parts go to the file store, as the agent's images
        recorder.outbound.image(recorder, [image for part in content if (image := _image_of(part))])


def _on_reasoning(recorder: Recorder, e: Mapping[str, Any]) -> None:
    recorder.reasoning(_str(e.get("delta")), _str(e.get("messageId")))


def _on_reasoning_end(recorder: Recorder, e: Mapping[str, Any]) -> None:
    if recorder._reasoning is not None:
        recorder._reasoning.duration = int(recorder._clock() - recorder._reasoning_start)


def _on_snapshot(recorder: Recorder, e: Mapping[str, Any]) -> None:
    messages = [m for m in e.get("messages") or [] if isinstance(m, Mapping)]
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    recorder.agent_messages.snapshot(m for m in messages[last_user + 1 :] if m.get("id") not in recorder._input_ids)
    if not (recorder._streamed_any or recorder.segments):  # nothing streamed: the snapshot is the record
        for message in messages:
            if message.get("id") not in recorder._input_ids:
                _replay_message(recorder, message)
        return
    # The stream is the record and a snapshot never reorders it; what the snapshot says beyond
    # it (an answer or a result that never streamed, arguments the stream lost) is added.
    for message in messages[last_user + 1 :]:
        if message.get("id") not in recorder._input_ids:
            _reconcile(recorder, message)


def _on_run_finished(recorder: Recorder, e: Mapping[str, Any]) -> None:
    recorder.outbound.usage_total(e.get("usage"))
    recorder.outbound.run_ended()  # a resumed run's usage adds to this one's
    outcome = e.get("outcome")
    if recorder.outbound.pause(recorder, outcome):
        return
    if isinstance(outcome, Mapping) and outcome.get("type") == "cancelled":
        recorder.cancelled()
        return
    if recorder.outbound.leave_to_client(recorder, outcome):
        return
    recorder.finish()


def _on_calls_ran(recorder: Recorder, e: Mapping[str, Any]) -> None:
    recorder.calls_ran()


def _on_run_error(recorder: Recorder, e: Mapping[str, Any]) -> None:
    recorder.outbound.usage_total(e.get("usage"))
    message = _str(e.get("message")) or "The agent reported an error."
    code = _str(e.get("code"))
    recorder.finish(error=f"{message} ({code})" if code else message)


def _reconcile(recorder: Recorder, message: Mapping[str, Any]) -> None:
    """One message of a snapshot taken after the stream: only what the stream did not say."""
    if message.get("subagentRunId"):
        return  # a subagent's own: its block shows what it streamed
    role = message.get("role")
    if role == "assistant":
        text = _parts_concatenated(message.get("content"))
        if text.strip() and message.get("id") not in recorder._text_ids and not _said(recorder, text):
            recorder.text(text, None)  # an answer that never streamed (CrewAI's flows)
        for call in message.get("toolCalls") or []:
            if not isinstance(call, Mapping):
                continue
            function: Mapping[str, Any] = call["function"] if isinstance(call.get("function"), Mapping) else {}
            call_id, arguments = _str(call.get("id")), _str(function.get("arguments"))
            known = recorder._calls.get(call_id)
            if known is None:
                recorder.tool_call(call_id, _str(function.get("name")), _str(message.get("id")))
                recorder.tool_args(call_id, arguments)
            elif not recorder._is_emitted(known[0]) and _is_json(arguments) and not _is_json(known[1].arguments):
                known[1].arguments = arguments  # arguments the stream lost, or never sent
    elif role == "tool":
        known = recorder._calls.get(_str(message.get("toolCallId")))
        if known is not None and known[1].result is None:  # a result that never streamed (LlamaIndex)
            recorder.tool_result(known[1].id, result_text(message.get("content")), _str(message.get("id")))


def _said(recorder: Recorder, text: str) -> bool:
    """Whether this text already is in the turn (streamed, or from an earlier snapshot)."""
    said = "".join(s.text for s in recorder.segments if isinstance(s, Text)) + recorder._tail
    return recorder.scrubber.text(text).strip() in said


def _replay_message(recorder: Recorder, message: Mapping[str, Any]) -> None:
    role = message.get("role")
    if role == "assistant":
        recorder.text(_parts_concatenated(message.get("content")), None)
        for call in message.get("toolCalls") or []:
            function = call.get("function") or {}
            recorder.tool_call(_str(call.get("id")), _str(function.get("name")), _str(message.get("id")))
            recorder.tool_args(_str(call.get("id")), _str(function.get("arguments")))
    elif role == "tool":
        recorder.tool_result(
            _str(message.get("toolCallId")), result_text(message.get("content")), _str(message.get("id"))
        )
    elif role == "reasoning":
        recorder.reasoning(_parts_concatenated(message.get("content")), _str(message.get("id")))


_HANDLERS: dict[str, Callable[[Recorder, Mapping[str, Any]], None]] = {
    "SUBAGENT_STARTED": _on_subagent_started,
    "SUBAGENT_FINISHED": _on_subagent_end,
    "SUBAGENT_ERROR": _on_subagent_end,
    "TEXT_MESSAGE_START": _on_text_start,
    "TEXT_MESSAGE_CONTENT": _on_text_content,
    "TEXT_MESSAGE_CHUNK": _on_text_content,
    "TOOL_CALL_START": _on_tool_start,
    "TOOL_CALL_ARGS": _on_tool_args,
    "TOOL_CALL_CHUNK": _on_tool_chunk,
    "TOOL_CALL_RESULT": _on_tool_result,
    "REASONING_MESSAGE_CONTENT": _on_reasoning,
    "REASONING_MESSAGE_CHUNK": _on_reasoning,
    "THINKING_TEXT_MESSAGE_CONTENT": _on_reasoning,
    "REASONING_MESSAGE_END": _on_reasoning_end,
    "REASONING_END": _on_reasoning_end,
    "THINKING_END": _on_reasoning_end,
    "MESSAGES_SNAPSHOT": _on_snapshot,
    "RUN_FINISHED": _on_run_finished,
    "RUN_ERROR": _on_run_error,
    CALLS_RAN: _on_calls_ran,
    "CUSTOM": lambda recorder, e: recorder.outbound.custom(
        recorder, _str(e.get("name")), e.get("value"), e.get("rawEvent")
    ),
    "STEP_STARTED": lambda recorder, e: recorder.outbound.step(recorder, _str(e.get("stepName"))),
    "ACTIVITY_SNAPSHOT": lambda recorder, e: recorder.outbound.activity(recorder, e),
    "ACTIVITY_DELTA": lambda recorder, e: recorder.outbound.activity(recorder, e),
    USAGE: lambda recorder, e: recorder.outbound.usage_total(e.get("usage")),
}
