"""Which Recorder handler takes each AG-UI event type, and which events a subagent owns.

After the recorder in the build: the table names the Recorder's methods, and Recorder.feed looks
it up only when it runs.
"""

from collections.abc import Callable, Mapping
from typing import Any

from agent_pipe.constants import CALLS_RAN, USAGE
from agent_pipe.helpers import _str
from agent_pipe.recorder import Recorder

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

_HANDLERS: dict[str, Callable[[Recorder, Mapping[str, Any]], None]] = {
    "SUBAGENT_STARTED": Recorder._on_subagent_started,
    "SUBAGENT_FINISHED": Recorder._on_subagent_end,
    "SUBAGENT_ERROR": Recorder._on_subagent_end,
    "TEXT_MESSAGE_START": Recorder._on_text_start,
    "TEXT_MESSAGE_CONTENT": Recorder._on_text_content,
    "TEXT_MESSAGE_CHUNK": Recorder._on_text_content,
    "TOOL_CALL_START": Recorder._on_tool_start,
    "TOOL_CALL_ARGS": Recorder._on_tool_args,
    "TOOL_CALL_CHUNK": Recorder._on_tool_chunk,
    "TOOL_CALL_RESULT": Recorder._on_tool_result,
    "REASONING_MESSAGE_CONTENT": Recorder._on_reasoning,
    "REASONING_MESSAGE_CHUNK": Recorder._on_reasoning,
    "THINKING_TEXT_MESSAGE_CONTENT": Recorder._on_reasoning,
    "REASONING_MESSAGE_END": Recorder._on_reasoning_end,
    "REASONING_END": Recorder._on_reasoning_end,
    "THINKING_END": Recorder._on_reasoning_end,
    "MESSAGES_SNAPSHOT": Recorder._on_snapshot,
    "RUN_FINISHED": Recorder._on_run_finished,
    "RUN_ERROR": Recorder._on_run_error,
    CALLS_RAN: Recorder._on_calls_ran,
    "CUSTOM": lambda recorder, e: recorder.outbound.custom(
        recorder, _str(e.get("name")), e.get("value"), e.get("rawEvent")
    ),
    "STEP_STARTED": lambda recorder, e: recorder.outbound.step(recorder, _str(e.get("stepName"))),
    "ACTIVITY_SNAPSHOT": lambda recorder, e: recorder.outbound.activity(recorder, e),
    "ACTIVITY_DELTA": lambda recorder, e: recorder.outbound.activity(recorder, e),
    USAGE: lambda recorder, e: recorder.outbound.usage_total(e.get("usage")),
}
