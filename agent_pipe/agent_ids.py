"""The agent's own message ids: kept with an answer, given back with the next turn's history.

A server that keeps the thread itself merges the history it receives into it by message id
(ag-ui-langgraph's checkpointer, keyed by the thread): an earlier answer sent back under other ids
than the ones the server gave it is added to the thread a second time, and its model reads it
twice. The rendered answer has no room for the ids of its text, so the pipe keeps them beside it:
in the data of the answer's last status, which Open WebUI stores with the message
(``statusHistory``), and reads them back from the stored chat next turn (OpenWebUIStore).

Nothing here is trusted for more than an id: a text gets the server's id only while it still
reads as the server said it (a digest of it is kept, an edited answer goes back under the pipe's
own ids), and which tool blocks become calls stays the Signer's decision alone.
"""

import hashlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agent_pipe.helpers import _parts_concatenated, _str

# === the agent's message ids ======================================================================

AGENT_MESSAGES_KEY = "agent_messages"  # the key of the last status's data that holds them
MAX_AGENT_MESSAGES = 200  # an answer's entries kept at most (a status is stored with every message)


def text_digest(text: str) -> str:
    """What a text is checked by next turn: leading and trailing whitespace may not survive storing."""
    return hashlib.sha256(text.strip().encode()).hexdigest()[:16]


class AgentMessages:
    """One answer's messages as the agent named them: from its stream, or from its last
    MESSAGES_SNAPSHOT when it sent one (what the server keeps: ag-ui-langgraph streams a tool
    result under the call's id and keeps it under another)."""

    def __init__(self) -> None:
        self._texts: dict[str, list[str]] = {}  # message id -> its text deltas
        self._parents: dict[str, str] = {}  # call id -> the message id it streamed under
        self._results: dict[str, str] = {}  # call id -> the id of its result's message
        self._snapshot: list[Mapping[str, Any]] | None = None

    def parts(self, message_id: str) -> list[str]:
        """The list a text message's deltas go into (the Recorder appends to it as they stream)."""
        return self._texts.setdefault(message_id, [])

    def call(self, call_id: str, parent_id: str) -> None:
        if call_id and parent_id:
            self._parents.setdefault(call_id, parent_id)

    def result(self, call_id: str, message_id: str) -> None:
        if call_id and message_id:
            self._results.setdefault(call_id, message_id)

    def snapshot(self, messages: Iterable[Mapping[str, Any]]) -> None:
        """The answer's messages of a snapshot (after the last user message, the input left out)."""
        self._snapshot = list(messages)

    def entries(self, redact: Callable[[str], str] = str) -> list[dict[str, Any]]:
        """``{"id", "text": digest, "calls": [...]}`` per assistant message, ``{"id", "result": call id}``
        per tool message; no entry for a message the server gave no id. Ids pass ``redact`` (keys
        masked, as in the tool blocks)."""
        out = self._from_snapshot() if self._snapshot is not None else self._from_stream()
        for entry in out[:MAX_AGENT_MESSAGES]:
            entry["id"] = redact(entry["id"])
            if "calls" in entry:
                entry["calls"] = [redact(c) for c in entry["calls"]]
            if "result" in entry:
                entry["result"] = redact(entry["result"])
        return out[:MAX_AGENT_MESSAGES]

    def _from_snapshot(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for message in self._snapshot or []:
            message_id, role = _str(message.get("id")), message.get("role")
            if not message_id or message.get("subagentRunId"):
                continue
            if role == "assistant":
                entry: dict[str, Any] = {"id": message_id}
                text = _parts_concatenated(message.get("content"))
                if text.strip():
                    entry["text"] = text_digest(text)
                calls = [_str(c.get("id")) for c in message.get("toolCalls") or [] if isinstance(c, Mapping)]
                if calls:
                    entry["calls"] = calls
                out.append(entry)
            elif role == "tool" and message.get("toolCallId"):
                out.append({"id": message_id, "result": _str(message.get("toolCallId"))})
        return out

    def _from_stream(self) -> list[dict[str, Any]]:
        entries: dict[str, dict[str, Any]] = {}
        for message_id, parts in self._texts.items():
            text = "".join(parts)
            if text.strip():
                entries[message_id] = {"id": message_id, "text": text_digest(text)}
        for call_id, parent in self._parents.items():
            entries.setdefault(parent, {"id": parent}).setdefault("calls", []).append(call_id)
        results = [{"id": message_id, "result": call_id} for call_id, message_id in self._results.items()]
        return [*entries.values(), *results]


class KnownIds:
    """One earlier answer's stored entries, each given to at most one message of the history."""

    def __init__(self, entries: Any) -> None:
        entries = entries if isinstance(entries, list) else []
        self._entries = [e for e in entries if isinstance(e, Mapping) and isinstance(e.get("id"), str) and e["id"]]
        self._used: set[int] = set()

    def text(self, text: str) -> Mapping[str, Any] | None:
        """The entry of the message that said ``text`` (as it said it), or None."""
        digest = text_digest(text)
        return self._take(lambda e: e.get("text") == digest)

    def step(self, call_ids: list[str]) -> Mapping[str, Any] | None:
        """The entry of the message that made these calls (and said nothing the history holds apart)."""
        return self._take(lambda e: "text" not in e and _calls(e) >= set(call_ids))

    def result(self, call_id: str) -> str | None:
        entry = self._take(lambda e: e.get("result") == call_id)
        return entry["id"] if entry else None

    def _take(self, match: Any) -> Mapping[str, Any] | None:
        for n, entry in enumerate(self._entries):
            if n not in self._used and match(entry):
                self._used.add(n)
                return entry
        return None


def _calls(entry: Mapping[str, Any]) -> set[str]:
    calls = entry.get("calls")
    return {c for c in calls if isinstance(c, str)} if isinstance(calls, list) else set()


def merges(entry: Mapping[str, Any] | None, call_ids: list[str]) -> bool:
    """Whether the server said this text and these calls as one message (the AG-UI shape of a model
    step that speaks, then calls: one assistant message with content and toolCalls)."""
    return entry is not None and bool(call_ids) and _calls(entry) >= set(call_ids)


def stored_agent_messages(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The entries an Open WebUI message's stored statuses hold (the last status that has any)."""
    statuses = message.get("statusHistory")
    for status in reversed(statuses if isinstance(statuses, list) else []):
        entries = status.get(AGENT_MESSAGES_KEY) if isinstance(status, Mapping) else None
        if isinstance(entries, list):
            return [e for e in entries if isinstance(e, Mapping)]
    return []
