"""Open WebUI's messages -> the agent's messages (AG-UI or OpenAI), verified tool blocks only."""

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agent_pipe.agent_ids import KnownIds, merges
from agent_pipe.files import agui_content
from agent_pipe.helpers import _str, _text_parts_by_line
from agent_pipe.parsing import parse_content
from agent_pipe.secrets import Signer, unescape_markup
from agent_pipe.segments import Segment, Text, ToolCall, ToolStep

# === history: Open WebUI messages -> the agent's messages =========================================


class HistoryVerifier:
    """Which tool blocks of one history become calls: those the pipe signed, unaltered, for this
    chat, agent and user (the Signer's scope), each once and where it was made.

    ``message()`` opens the next assistant message and returns its check for parse_content. A
    turn's blocks count only in the first message that shows them, and a call id only the first
    time: a block repeated at a later turn, or twice in one message, is text (an agent must not
    get two calls with one id).
    """

    def __init__(self, signer: Signer | None) -> None:
        self._signer = signer
        self._messages = 0
        self._turns: dict[str, int] = {}  # turn -> the message that showed it first
        self._calls: set[str] = set()

    def message(self) -> Callable[[ToolCall, str], bool]:
        self._messages += 1
        return functools.partial(self._verify, self._messages)

    def _verify(self, message: int, call: ToolCall, message_id: str) -> bool:
        if self._signer is None or not self._signer.verify(call, message_id):
            return False
        if self._turns.setdefault(call.turn, message) != message or call.id in self._calls:
            return False
        self._calls.add(call.id)
        return True


def unverified_tool_text(message: Mapping[str, Any]) -> str:
    """A client-supplied tool call or tool result (OpenAI-shaped history) as plain text: the pipe
    did not render it, so nothing vouches that it happened."""
    text = _text_parts_by_line(message.get("content"))
    if message.get("role") == "tool":
        return f"[unverified tool result for {_str(message.get('tool_call_id'))}] {text}"
    lines = [text] if text.strip() else []
    for call in message.get("tool_calls") or []:
        if isinstance(call, Mapping):
            function = call.get("function") or {}
            lines.append(
                f"[unverified tool call {_str(call.get('id'))}] "
                f"{_str(function.get('name'))}({_str(function.get('arguments'))})"
            )
    return "\n".join(lines)


def to_agui_messages(
    messages: Iterable[Mapping[str, Any]],
    signer: Signer | None = None,
    known: list[list[Mapping[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    """Open WebUI's ``body["messages"]`` as AG-UI messages, assistant turns in streamed order.

    Reasoning and error segments stay in the UI. A call without a result is kept (an AG-UI server
    decides what to do with a pending call; Agent Framework answers it with a synthetic result).
    Only tool blocks ``signer`` verifies become calls; anything else reaches the agent as text.
    ``known`` holds the agent's own ids of the last assistant messages (agent_ids.py, matched from
    the newest): an earlier answer goes back under the ids the agent gave it.
    """
    messages = list(messages)
    answers = [i for i, m in enumerate(messages) if m.get("role") == "assistant" and not m.get("tool_calls")]
    stored = dict(zip(reversed(answers), reversed(known or []), strict=False))
    out: list[dict[str, Any]] = []
    verify = HistoryVerifier(signer)
    for i, message in enumerate(messages):
        role = message.get("role")
        prefix = f"aihub-{i}"
        if role == "tool" or (role == "assistant" and message.get("tool_calls")):
            out.append({"id": prefix, "role": "assistant", "content": unverified_tool_text(message)})
        elif role == "assistant":
            content = message.get("content")
            if isinstance(content, str) and content:
                segments = parse_content(content, prefix, verify.message())
                out.extend(_segments_to_agui(segments, prefix, KnownIds(stored.get(i))))
        elif role == "user":
            out.append({"id": prefix, "role": role, "content": agui_content(message.get("content"))})
        elif role in ("system", "developer"):
            out.append({"id": prefix, "role": role, "content": _text_parts_by_line(message.get("content"))})
    return _unique_ids(out)


def _unique_ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Servers deduplicate by message id (Agent Framework does); a server that reuses ids from
    run to run must not make an earlier turn's message vanish."""
    seen: set[str] = set()
    for n, message in enumerate(messages):
        while message["id"] in seen or not message["id"]:
            message["id"] = f"{message['id'] or 'aihub'}-{n}"
        seen.add(message["id"])
    return messages


def _segments_to_agui(segments: list[Segment], prefix: str, known: KnownIds | None = None) -> list[dict[str, Any]]:
    """One answer's segments as AG-UI messages, under the agent's own ids where ``known`` has them:
    a text and the calls the agent made in the same message go back as that one message."""
    known = known or KnownIds(None)
    out: list[dict[str, Any]] = []
    said: Mapping[str, Any] | None = None  # the agent's message of the text just before
    for j, segment in enumerate(segments):
        if isinstance(segment, Text):
            text = unescape_markup(segment.text)
            said = known.text(text)
            out.append({"id": said["id"] if said else f"{prefix}-{j}", "role": "assistant", "content": text})
            continue
        if isinstance(segment, ToolStep):
            calls = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in segment.calls
            ]
            if merges(said, [c.id for c in segment.calls]) and out and out[-1]["role"] == "assistant":
                out[-1]["toolCalls"] = calls  # the agent's one message: its text, then its calls
            else:
                step = known.step([c.id for c in segment.calls])
                out.append(
                    {
                        "id": step["id"] if step else segment.message_id,
                        "role": "assistant",
                        "content": "",  # CrewAI's Agent.kickoff rejects a toolCalls message without content
                        "toolCalls": calls,
                    }
                )
            for k, call in enumerate(segment.calls):
                if call.result is not None:
                    out.append(
                        {
                            "id": known.result(call.id) or call.result_id or f"{prefix}-{j}-{k}",
                            "role": "tool",
                            "toolCallId": call.id,
                            "content": call.result,
                        }
                    )
        said = None
    return out


def to_openai_messages(messages: Iterable[Mapping[str, Any]], signer: Signer | None = None) -> list[dict[str, Any]]:
    """Open WebUI's ``body["messages"]`` as OpenAI chat messages, assistant turns in streamed order.

    A call without a result is dropped: OpenAI-style servers reject a ``tool_calls`` message that
    no ``tool`` message answers, and Open WebUI cannot supply the missing result. Only tool blocks
    ``signer`` verifies become calls; anything else reaches the agent as text.
    """
    out: list[dict[str, Any]] = []
    verify = HistoryVerifier(signer)
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "tool" or (role == "assistant" and message.get("tool_calls")):
            out.append({"role": "assistant", "content": unverified_tool_text(message)})
        elif role == "assistant" and isinstance(content, str):
            for segment in parse_content(content, verify=verify.message()):
                if isinstance(segment, Text):
                    out.append({"role": "assistant", "content": unescape_markup(segment.text)})
                elif isinstance(segment, ToolStep):
                    answered = [c for c in segment.calls if c.result is not None]
                    if not answered:
                        continue
                    out.append(
                        {
                            "role": "assistant",
                            "content": "",
                            "tool_calls": [
                                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                for c in answered
                            ],
                        }
                    )
                    out.extend({"role": "tool", "tool_call_id": c.id, "content": c.result} for c in answered)
        elif role in ("user", "system", "developer", "assistant"):
            keep = ("role", "content", "name")
            out.append({key: value for key, value in message.items() if key in keep})
    return out
