"""
title: AI Hub Agent Pipe
author: aihub-provision
version: 0.1.0
description: One model per agent; sends the chat and requested features to it and renders its stream in order.
required_open_webui_version: 0.12.4
global: false
"""

# Generated from agent_pipe/ by scripts/build-pipe: edit the modules there, then run scripts/build-pipe.
# CI runs `scripts/build-pipe --check`, which fails when this file differs from a fresh build.

# How a turn is shown (the contract this file keeps)
# ---------------------------------------------------
# The agent's events are recorded as ordered *segments*: text, a tool step (one assistant message
# with one or more calls, each with its result), reasoning, and an error. The segments are rendered
# as Open WebUI assistant content, exactly the markup Open WebUI 0.12.4 reads:
#   - a tool call:  <details type="tool_calls" done=".." id=".." name=".." arguments=".." result="..">
#   - reasoning:    <details type="reasoning" done="true" duration="..">, each line quoted with "> "
#   - an error:     a "> [!CAUTION]" alert at the end, after everything that had streamed.
# Extra attributes (message_id, result_id on tool calls, id on reasoning) carry the AG-UI ids so
# the next turn can rebuild the transcript: parse_content() is the inverse of render_segments().
# A tool block also carries ``sig``, an HMAC of its fields under the HISTORY_SIGNING_KEY valve, bound
# to the chat, the agent, the user and the turn (``turn``): only a block the pipe itself rendered
# becomes a tool call next turn, in that chat, for that agent and user, once; an edited, made-up or
# replayed block reaches the agent as plain text, and "<details" in the agent's own text is written
# as "&lt;details".
# Every key the pipe holds is masked in everything it shows or logs (the Scrubber).
#
# How it streams is the Recorder's docstring.
#
# The modules of agent_pipe/ this file is built from, in order (scripts/build-pipe):
#   constants      what provision and the agents agree on, limits, timings, the errors raised
#   helpers        small conversions, among them the two rules for message content as text
#   segments       what one turn is made of
#   agent_ids      the agent's own message ids, kept with an answer for the next turn's history
#   rendering      segments -> Open WebUI assistant content
#   parsing        stored content -> segments (the inverse)
#   secrets        the Scrubber and TokenMask (masking keys), the Signer (tool blocks)
#   history        Open WebUI's messages -> the agent's messages
#   files          which files the user attached, where they go, as content parts
#   file_store     the request body with files in it; reading them from Open WebUI's store
#   request        who asks, in which chat, under which trace: identity, ids, headers
#   wire           SSE, the OpenAI chunk adapter, AgentStream (bytes in, AG-UI events out)
#   results        a tool result as the text it holds; an AG-UI 1.0 image part
#   recorder       events -> ordered segments and stable output
#   dispatch       what each AG-UI event means for the Recorder, and the table of its handlers
#   usage          token usage in any agent's spelling -> the counts Open WebUI stores
#   outbound       what shows beside the answer: usage, sources, images, steps
#   valves         the AGENTS and API_KEYS valves, parsed once per text
#   transport      the pool, the proxy, the status line, batching, the run
#   dialogs        what a paused run asks the user in Open WebUI's dialogs; the answer read back
#   questions      a run that pauses to ask the user, and is resumed
#   failures       what went wrong, as the text the user reads
#   probe          the admin's probe: can this process reach an agent's backend
#   pipe           the Pipe class Open WebUI calls, last

import asyncio
import base64
import functools
import hashlib
import hmac
import html
import http
import inspect
import ipaddress
import json
import logging
import os
import re
import socket
import ssl
import sys
import threading
import time
import traceback
import types
import urllib.parse
import urllib.request
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import quote, quote_plus, urlsplit

import aiohttp
from pydantic import BaseModel, ConfigDict, Field, ValidationError

# --- begin agent_pipe/constants.py ---
# === constants ====================================================================================

# The event types only the pipe itself makes.
CALLS_RAN = "AIHUB_TOOL_CALLS_RAN"  # the pipe's own event: the calls waiting for a result ran (OpenAI)
USAGE = "AIHUB_USAGE"  # the pipe's own event: an OpenAI stream's usage chunk (the run's total)

# The AG-UI version the pipe speaks, sent as RunAgentInput.protocolVersion: Pydantic AI sends 1.0's
# outcomes (cancelled, pendingToolCallIds) only to a client that declares 1.0.
AGUI_PROTOCOL_VERSION = "1.0"

# What the agent sends beside its answer (the recorder's Outbound).
SOURCE_EVENT = "aihub.source"
IMAGE_EVENT = "aihub.image"
MAX_SOURCES = 50  # per turn: every source is a write of the chat's row
# The MAX_IMAGES and MAX_TURN_IMAGES_MB valves' defaults: what one answer may store and attach.
MAX_IMAGES = 10
MAX_TURN_IMAGES_MB = 30
# A token count above this is not a count (no run of one answer reads a billion tokens): dropped,
# and sums stop here, so a broken agent cannot write 10**30 into Open WebUI's usage records.
MAX_USAGE_COUNT = 10**9
MAX_STATUS_CHARS = 120  # a status line from the agent's words (a step, a workflow state, a tool's name)
# The MAX_EVENT_MB valve's default: an SSE line or event past it ends the run. Above an image of
# MAX_IMAGE_MB (10) as base64 (13.4 MB): an agent's image arrives in one event.
MAX_EVENT_MB = 16

# Who asks (the request).
IDENTITY_HEADER = "X-AIHub-Identity"
IDENTITY_ISSUER = "aihub-agent-pipe"
IDENTITY_KEY_ENV = "AIHUB_IDENTITY_PRIVATE_KEY"
IDENTITY_KID_ENV = "AIHUB_IDENTITY_KEY_ID"

# Masking (secrets).
REDACTED = "[redacted]"
WITHHELD = "The agent's message was withheld because it repeats part of a secret."
# A server may echo a key shortened (an excerpt, a truncated header): a piece this long of a key
# in an error text withholds the whole text.
SECRET_FRAGMENT = 8

# Attached files (history).
FILE_REFERENCE_TYPES = ("file", "image", "doc")  # references that name one stored file
# The MAX_FILE_REFERENCES valve's default: references looked up per request (each is a store read;
# an API client can send thousands of made-up ids).
MAX_FILE_REFERENCES = 30
RASTER_IMAGES = ("image/png", "image/jpeg", "image/gif", "image/webp")
MB = 1024 * 1024
BASE64_BLOCK = 3 * 128 * 1024  # bytes read and encoded at a time: a multiple of 3, so the pieces join

# Questions to the user (transport: the run).
MAX_RESUMES = 5  # questions in one answer; a run that keeps pausing ends after that many
ASKED = "Waiting for your answer…"
APPROVED = "[approved by the user] "  # an approved call's result starts with it: its block shows it

# Timings and connections (transport).
ASKING_DELAY_SECONDS = 0.5  # an agent that answers sooner never shows "Asking <agent>…"
STEP_DELAY_SECONDS = 0.5  # a step that something else follows sooner is never shown
MAX_CONNECTIONS = 1000  # a streaming chat holds one connection for its whole run
# A user's groups (the tokens' groups claim) are read from Open WebUI's database at most this often
# per user: the read costs Open WebUI ~4-5 ms of CPU a chat (0.12, SQLite), which at ten chats at
# a time is +35 ms on every first token. A group change reaches the claim within this time; a
# token lives 300 s by default, so an agent already accepts claims older than that.
GROUPS_TTL_SECONDS = 30.0
GROUPS_CACHE_USERS = 4096  # past this many users the cache starts again
KEEPALIVE_SECONDS = 4.0  # under the idle timeout of common servers (uvicorn's and Node's are 5 s)
FINISH_GRACE_SECONDS = 0.1  # how long the body's end may lag the run's end and keep the connection


# The errors the pipe raises; failure_text (failures) says each one to the user.
class PipeConfigError(Exception):
    """The valves do not allow the request (e.g. a key name missing from API_KEYS)."""


class IdentityRequired(PipeConfigError):
    """The agent's backend asks for ``identity: signed`` and no key can sign."""


class AgentHTTPError(Exception):
    """The agent answered with an HTTP error status; ``detail`` is raw (the pipe scrubs it)."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.detail = detail


class StreamEndedEarly(Exception):
    """The agent's stream ended before RUN_FINISHED or RUN_ERROR."""


class EventTooLarge(Exception):
    """An SSE line or event of the agent's stream is larger than the MAX_EVENT_MB valve allows."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"over {limit} bytes")
        self.limit = limit


class FileTooLarge(Exception):
    """The file's bytes are more than the limit allows (the record may have said less)."""

    def __init__(self, size: int) -> None:
        super().__init__(f"{size} bytes")
        self.size = size


# --- begin agent_pipe/helpers.py ---
# === helpers ======================================================================================


log = logging.getLogger(__name__)


def random_hex(size: int = 16) -> str:
    """``2 * size`` random hex digits (32: like ``uuid4().hex`` at a fifth of the cost): ids for
    runs, threads, segments, calls and traces, some of them made before every request to an agent."""
    return os.urandom(size).hex()


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def _parts_concatenated(content: Any) -> str:
    """An agent's content as text: the text of every part joined with nothing between, anything
    else as JSON. For what the agent sends (AG-UI 1.0 and OpenAI allow a list of parts), where
    the parts are pieces of one text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_str(part.get("text")) for part in content if isinstance(part, Mapping))
    return "" if content is None else json.dumps(content)


def _text_parts_by_line(content: Any) -> str:
    """An Open WebUI message's content as text: only its "text" parts, one per line (image and
    file parts left out). For the history the agent gets, where each part stands on its own."""
    if isinstance(content, list):
        return "\n".join(
            _str(part.get("text")) for part in content if isinstance(part, Mapping) and part.get("type") == "text"
        )
    return _str(content)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _json_or_none(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return None


EventEmitter = Callable[[dict[str, Any]], Awaitable[None]] | None


# --- begin agent_pipe/segments.py ---
# === segments =====================================================================================


@dataclass
class Text:
    """Assistant text, one or more streamed messages in a row."""

    text: str


@dataclass
class ToolCall:
    """One call; ``result`` stays None until (or unless) its result arrives."""

    id: str
    name: str
    arguments: str = ""
    result: str | None = None
    result_id: str | None = None
    failed: bool = False  # closed by the pipe because the run ended in an error
    # ran on the agent's side, result not streamed (an OpenAI stream went on after the call)
    unreported: bool = False
    # Open WebUI's id of the assistant message the block was rendered in, set with ``sig``
    turn: str = ""
    sig: str = ""  # the Signer's HMAC over the fields above, set when the block is rendered


@dataclass
class ToolStep:
    """Calls made together (parallel calls of one model step): one assistant message."""

    message_id: str
    calls: list[ToolCall] = field(default_factory=list)


@dataclass
class Reasoning:
    """A reasoning block, placed where it streamed; ``duration`` in whole seconds."""

    id: str
    text: str
    duration: int = 0


@dataclass
class Error:
    """Why the run stopped early; always the last segment."""

    message: str


@dataclass
class Subagent:
    """An AG-UI 1.0 subagent's own text, calls and reasoning (events with its subagentRunId), in a
    block named after it, where it started; ``failed`` after its SUBAGENT_ERROR."""

    id: str
    name: str
    segments: "list[Segment]" = field(default_factory=list)
    failed: bool = False


Segment = Text | ToolStep | Reasoning | Error | Subagent


# --- begin agent_pipe/agent_ids.py ---
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


# --- begin agent_pipe/rendering.py ---
# === rendering ====================================================================================


def _attr(value: str) -> str:
    """Escape an attribute value; newlines too, since Open WebUI's attribute regex is one line."""
    return html.escape(value, quote=True).replace("\r", "&#13;").replace("\n", "&#10;")


def render_tool_call(call: ToolCall, message_id: str) -> str:
    done = call.result is not None or call.unreported
    attrs = [
        ("type", "tool_calls"),
        ("done", "true" if done else "false"),
        ("id", call.id),
        ("name", call.name),
        ("arguments", call.arguments),
    ]
    if call.result is not None:
        attrs.append(("result", call.result))
    elif call.unreported:
        attrs.append(("unreported", "true"))
    attrs.append(("message_id", message_id))
    if call.result is not None and call.result_id:
        attrs.append(("result_id", call.result_id))
    if call.failed:
        attrs.append(("status", "failed"))  # Open WebUI shows a failed call as done, with an error mark
    if call.turn:
        attrs.append(("turn", call.turn))
    if call.sig:
        attrs.append(("sig", call.sig))
    summary = ("Tool Failed" if call.failed else "Tool Executed") if done else "Executing..."
    head = " ".join(f'{key}="{_attr(value)}"' for key, value in attrs)
    return f"<details {head}>\n<summary>{summary}</summary>\n</details>\n"


def render_reasoning(reasoning: Reasoning) -> str:
    body = "\n".join("> " + line for line in html.escape(reasoning.text, quote=False).split("\n"))
    return (
        f'<details type="reasoning" done="true" duration="{reasoning.duration}" id="{_attr(reasoning.id)}">\n'
        f"<summary>Thought for {reasoning.duration} seconds</summary>\n{body}\n</details>\n"
    )


_ERROR_LEAD = "> [!CAUTION]\n> Agent error: "


def render_error(error: Error) -> str:
    lines = html.escape(error.message, quote=False).split("\n")
    return _ERROR_LEAD + "\n> ".join(lines) + "\n"


def render_piece(previous: Segment | None, segment: Segment) -> str:
    """One segment's markup, with the separator that keeps it a block of its own."""
    if isinstance(segment, Text):
        return segment.text
    after_text = isinstance(previous, Text)
    if isinstance(segment, ToolStep):
        return ("\n" if after_text else "") + "".join(render_tool_call(c, segment.message_id) for c in segment.calls)
    if isinstance(segment, Reasoning):
        return ("\n" if after_text else "") + render_reasoning(segment)
    if isinstance(segment, Subagent):
        return ("\n" if after_text else "") + render_subagent(segment)
    return ("\n\n" if after_text else "") + render_error(segment)


def render_subagent(subagent: Subagent) -> str:
    """A subagent's work as a collapsible block named after it (Open WebUI shows a details block
    of another type with its summary as the title, and its inner blocks as they are)."""
    failed = ' status="failed"' if subagent.failed else ""
    head = f'<details type="subagent" done="true" id="{_attr(subagent.id)}" name="{_attr(subagent.name)}"{failed}>'
    summary = html.escape(subagent.name, quote=False).replace("\n", " ") or "Subagent"
    return f"{head}\n<summary>{summary}</summary>\n{render_segments(subagent.segments)}\n</details>\n"


def render_segments(segments: Iterable[Segment]) -> str:
    out: list[str] = []
    previous: Segment | None = None
    for segment in segments:
        out.append(render_piece(previous, segment))
        previous = segment
    return "".join(out)


# --- begin agent_pipe/parsing.py ---
# === parsing stored content back ==================================================================


_BLOCK = re.compile(r'<details type="(tool_calls|reasoning)"([^>]*)>\n(.*?)</details>\n?', re.S)
_ATTRS = re.compile(r'(\w+)="([^"]*)"')
_ERROR_TAIL = re.compile(r"(?:\n\n)?> \[!CAUTION\]\n> Agent error: ((?:[^\n]*)(?:\n> [^\n]*)*)\n?\Z")


def parse_content(
    content: str, id_prefix: str = "aihub", verify: Callable[[ToolCall, str], bool] | None = None
) -> list[Segment]:
    """Turn stored assistant content back into segments: the inverse of render_segments.

    Text outside our blocks is kept verbatim. Tool blocks in a row that share ``message_id`` form
    one step; blocks without one (Open WebUI's own legacy markup) in a row form one step too.
    ``verify(call, message_id)`` decides which tool blocks count: a block it rejects stays text,
    markup and all (history passes the Signer, so a forged block never becomes a call).
    """
    error: Error | None = None
    tail = _ERROR_TAIL.search(content)
    if tail:
        error = Error(html.unescape(tail.group(1).replace("\n> ", "\n")))
        content = content[: tail.start()]
    segments: list[Segment] = []
    start = 0
    for block in _SUBAGENT_HEAD.finditer(content):
        if block.start() < start:
            continue  # inside the subagent block before
        close = _closing(content, block.start())
        if close < 0:
            break  # not closed (edited): the rest is read as it is
        _parse_flat(content[start : block.start()], id_prefix, verify, segments, before_block=True)
        attrs = {key: html.unescape(value) for key, value in _ATTRS.findall(block.group(1))}
        body = content[block.end() : close - len("</details>")]
        body = body.split("\n", 1)[1] if body.startswith("<summary>") and "\n" in body else body
        inner = parse_content(body[:-1] if body.endswith("\n") else body, id_prefix, None if verify is None else _none)
        segments.append(Subagent(attrs.get("id", ""), attrs.get("name", ""), inner, attrs.get("status") == "failed"))
        start = close + (1 if content.startswith("\n", close) else 0)
    _parse_flat(content[start:], id_prefix, verify, segments, before_block=False)
    if error:
        segments.append(error)
    return segments


_SUBAGENT_HEAD = re.compile(r'<details type="subagent"([^>]*)>\n')


def _none(call: ToolCall, message_id: str) -> bool:
    """A subagent's calls are its own: none of them becomes a call of the agent's history."""
    return False


def _closing(content: str, start: int) -> int:
    """Where the details block opened at ``start`` ends (after its "</details>"), counting the
    blocks inside it as Open WebUI does; -1 when it is not closed."""
    depth, index = 0, start
    while True:
        opening, closing = content.find("<details", index), content.find("</details>", index)
        if closing < 0:
            return -1
        if 0 <= opening < closing:
            depth, index = depth + 1, opening + len("<details")
            continue
        depth, index = depth - 1, closing + len("</details>")
        if depth == 0:
            return index


def _parse_flat(
    content: str,
    id_prefix: str,
    verify: Callable[[ToolCall, str], bool] | None,
    segments: list[Segment],
    before_block: bool,
) -> None:
    """Tool and reasoning blocks and the text around them, appended to ``segments``."""
    step_key: str | None = None  # message_id of the step the next adjacent block may join
    position = 0
    for match in _BLOCK.finditer(content):
        gap = content[position : match.start()]
        attrs = {key: html.unescape(value) for key, value in _ATTRS.findall(match.group(2))}
        if match.group(1) == "reasoning":
            _append_gap(segments, gap)
            position = match.end()
            segments.append(_parse_reasoning(match.group(3), attrs, f"{id_prefix}-r{len(segments)}"))
            step_key = None
            continue
        unreported = attrs.get("unreported") == "true"
        call = ToolCall(
            id=attrs.get("id", ""),
            name=attrs.get("name", ""),
            arguments=attrs.get("arguments", ""),
            result=attrs.get("result", "") if attrs.get("done") == "true" and not unreported else None,
            unreported=unreported,
            result_id=attrs.get("result_id"),
            failed=attrs.get("status") == "failed",
            turn=attrs.get("turn", ""),
            sig=attrs.get("sig", ""),
        )
        message_id = attrs.get("message_id", "")
        if verify is not None and not verify(call, message_id):
            continue  # not ours, or altered: the markup stays in the text around it
        if gap:
            _append_gap(segments, gap)
            step_key = None
        position = match.end()
        last = segments[-1] if segments else None
        if isinstance(last, ToolStep) and step_key == message_id:
            last.calls.append(call)
        else:
            segments.append(ToolStep(message_id=message_id or f"{id_prefix}-tc{len(segments)}", calls=[call]))
            step_key = message_id
    (_append_gap if before_block else _append_text)(segments, content[position:])


def _parse_reasoning(body: str, attrs: Mapping[str, str], fallback_id: str) -> Reasoning:
    if body.startswith("<summary>"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
    body = body[:-1] if body.endswith("\n") else body
    lines = [line[2:] if line.startswith("> ") else line.lstrip(">") for line in body.split("\n")]
    duration = attrs.get("duration", "")
    return Reasoning(
        id=attrs.get("id") or fallback_id,
        text=html.unescape("\n".join(lines)),
        duration=int(duration) if duration.isdigit() else 0,
    )


def _append_text(segments: list[Segment], text: str) -> None:
    if text.strip():
        segments.append(Text(text))


def _append_gap(segments: list[Segment], gap: str) -> None:
    """Text before a block: render_piece put one "\n" between text and the block that follows it."""
    _append_text(segments, gap[:-1] if gap.endswith("\n") else gap)


# --- begin agent_pipe/secrets.py ---
# === secrets: the scrubber, the token mask and the signer =========================================


_MARKUP = ("<details", "</details")  # what Open WebUI's Markdown turns into a (tool) block


def secret_forms(secret: str) -> set[str]:
    """The ways a key shows up in a server's echo: whole, URL- or form-encoded (``/`` kept or
    not), JSON-escaped (``\\/`` too), HTML-escaped and base64 (standard or urlsafe, padded or
    not): the forms of provisioner/redaction.py, which a test holds this copy to. Percent and
    ``\\u`` escapes match in any hex case: see ``_form_pattern``."""
    raw = secret.encode("utf-8")
    escaped = html.escape(secret)
    forms = {
        secret,
        quote(secret, safe=""),
        quote(secret, safe="/"),
        quote_plus(secret, safe=""),
        quote_plus(secret, safe="/"),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        json.dumps(secret)[1:-1].replace("/", "\\/"),
        escaped,
        html.escape(secret, quote=False),
        escaped.replace("&quot;", "&#34;").replace("&#x27;", "&#39;"),  # markupsafe's (Jinja's) quotes
    }
    if len(raw) >= SECRET_FRAGMENT:  # a shorter key's base64 is an ordinary word ("Z+a" is "With")
        forms |= {base64.b64encode(raw).decode("ascii"), base64.urlsafe_b64encode(raw).decode("ascii")}
    forms |= {f.rstrip("=") for f in forms if f.endswith("=")}
    return {f for f in forms if f}


# The hex digits of a percent-escape or a JSON \u escape (or of the start of one at a delta's end).
_ESCAPE_HEX = re.compile(r"(?<=%)[0-9A-Fa-f]{1,2}|(?<=\\u)[0-9A-Fa-f]{1,4}")


def _form_pattern(form: str) -> str:
    """A form as a regex whose escapes match in either hex case, mixed too (%2f%2F, \\u00E9)."""
    pattern, position = [], 0
    for match in _ESCAPE_HEX.finditer(form):
        pattern += [re.escape(form[position : match.start()]), f"(?i:{match.group(0)})"]
        position = match.end()
    return "".join([*pattern, re.escape(form[position:])])


def _fold_hex(text: str) -> str:
    """Escapes' hex digits upper-cased, so a streamed tail compares with a form in any hex case."""
    return _ESCAPE_HEX.sub(lambda match: match.group(0).upper(), text)


class Scrubber:
    """Masks every key the pipe holds in what it shows or logs, and defuses block markup in text.

    ``redact`` is for whole values (tool arguments and results, reasoning, statuses, log lines);
    ``error`` also withholds a text that still holds a piece of a key; ``text`` also writes
    "<details" as "&lt;details", so an agent's text never renders as a tool block. Text streams
    in deltas, so ``stable_length`` says how much of it can go out now: a tail that may be the
    start of a key or of the markup waits for the next delta.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        self._forms = sorted({_fold_hex(f) for s in self._secrets for f in secret_forms(s)}, key=len, reverse=True)
        alternatives = [_form_pattern(f) for f in self._forms]
        self._redact = re.compile("|".join(alternatives)) if alternatives else None
        self._text = re.compile("|".join([*alternatives, r"(?i:</?details)"]))
        self._longest = max([len(f) for f in self._forms] + [len(m) for m in _MARKUP])
        self._by_first: dict[str, list[str]] = {}
        for form in self._forms:
            self._by_first.setdefault(form[0], []).append(form)
        self._starts = re.compile("[" + re.escape("".join({*self._by_first, "<"})) + "]")

    def redact(self, value: str) -> str:
        return self._redact.sub(REDACTED, value) if self._redact and value else value

    def error(self, message: str) -> str:
        message = self.redact(message)
        for secret in self._secrets:
            size = min(SECRET_FRAGMENT, len(secret))
            if any(secret[i : i + size] in message for i in range(len(secret) - size + 1)):
                return WITHHELD
        return message

    def text(self, value: str) -> str:
        return self._text.sub(self._text_match, value) if value else value

    def _text_match(self, match: re.Match[str]) -> str:
        found = match.group(0)
        return "&lt;" + found[1:] if found[:1] == "<" and found.lower() in _MARKUP else REDACTED

    def stable_length(self, value: str) -> int:
        """How much of ``value`` can be passed to ``text`` now without cutting a key or markup apart."""
        tail = value[-(self._longest - 1) :] if self._longest > 1 else ""
        cut = len(value)
        for candidate in self._starts.finditer(tail):  # earliest start first: the longest partial
            rest = tail[candidate.start() :]
            forms = self._by_first.get(rest[0], ())
            lowered, folded = rest.lower(), _fold_hex(rest)
            if any(len(f) > len(rest) and f.startswith(folded) for f in forms) or any(
                len(m) > len(rest) and m.startswith(lowered) for m in _MARKUP
            ):
                cut = len(value) - len(rest)
                break
        if cut < len(value):  # a whole key or tag may still straddle the cut (overlapping keys)
            for match in self._text.finditer(value, max(0, cut - self._longest)):
                if match.start() < cut < match.end():
                    return match.start()
        return cut


def unescape_markup(text: str) -> str:
    """The agent's own text as it wrote it (history): the inverse of Scrubber.text's markup step."""
    return re.sub(r"&lt;(/?details)", r"<\1", text, flags=re.I)


class TokenMask:
    """Masks the secrets of one chat (its identity tokens, the user's OAuth token) in what the pipe
    shows or logs. Plain replaces, cheap to build: the Scrubber's patterns take milliseconds to
    compile, too much for every chat. ``stream`` holds back a tail that may be a token's start."""

    def __init__(self, tokens: Iterable[str] = ()) -> None:
        self.tokens = sorted(
            {t for t in tokens if isinstance(t, str) and len(t) >= SECRET_FRAGMENT}, key=len, reverse=True
        )
        self._held = ""

    def __bool__(self) -> bool:
        return bool(self.tokens)

    def redact(self, text: str) -> str:
        for token in self.tokens:
            if token in text:
                text = text.replace(token, REDACTED)
        return text

    def error(self, text: str) -> str:
        """Also withholds a text holding a piece of a token (a server may echo one shortened)."""
        text = self.redact(text)
        for token in self.tokens:
            size = 2 * SECRET_FRAGMENT
            if any(token[i : i + size] in text for i in range(0, max(1, len(token) - size + 1))):
                return WITHHELD
        return text

    def stream(self, chunk: str) -> str:
        if not self.tokens:
            return chunk
        text = self.redact(self._held + chunk)
        cut = self._cut(text)
        self._held = text[cut:]
        return text[:cut]

    def flush(self) -> str:
        held, self._held = self._held, ""
        return self.redact(held)

    def _cut(self, text: str) -> int:
        n, cut = len(text), len(text)
        for token in self.tokens:
            head = token[:3]
            position = text.find(head, max(0, n - len(token) + 1))
            while position >= 0:
                if token.startswith(text[position:]):
                    cut = min(cut, position)
                    break
                position = text.find(head, position + 1)
            for k in (1, 2):  # a tail shorter than the head
                if n >= k and token.startswith(text[n - k :]):
                    cut = min(cut, n - k)
        return cut


class Signer:
    """HMAC-SHA256 over a tool block's fields with the HISTORY_SIGNING_KEY valve, bound to where
    the block was made: the chat, the agent, the user and the turn (Open WebUI's id of the
    assistant message it was rendered in, kept in the block as ``turn``: the messages Open WebUI
    0.12.4 hands a pipe carry no ids, utils/middleware.py process_messages_with_output drops them).

    A chat's stored messages can be edited by the user (Open WebUI lets anyone edit an answer)
    and the agent's own text could imitate the markup, so the next turn trusts a tool block only
    when its ``sig`` matches: then the agent gets back a call and result that really happened, in
    this chat, from this agent, for this user. A block pasted into another chat, or shown to
    another agent or user, is text. Without a key, or outside a chat (no chat or message id),
    nothing is signed and nothing verifies.
    """

    def __init__(self, key: str, chat_id: str = "", agent_id: str = "", user_id: str = "", turn_id: str = "") -> None:
        self._key = key.encode()
        self._scope = [chat_id, agent_id, user_id]
        self.turn_id = turn_id  # the turn the blocks rendered now belong to

    def seal(self, call: ToolCall, message_id: str) -> None:
        """Bind a block that goes out now to this turn and sign it."""
        call.turn = self.turn_id
        call.sig = self.sign(call, message_id)

    def sign(self, call: ToolCall, message_id: str) -> str:
        if not (self._key and self._scope[0] and call.turn):
            return ""
        fields = [
            "aihub-tool-v2",
            *self._scope,
            call.turn,
            message_id,
            call.id,
            call.name,
            call.arguments,
            call.result,
            call.result_id,
            call.failed,
            call.unreported,
        ]
        payload = json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode()
        return hmac.new(self._key, payload, hashlib.sha256).hexdigest()

    def verify(self, call: ToolCall, message_id: str) -> bool:
        expected = self.sign(call, message_id)
        return bool(expected and call.sig) and hmac.compare_digest(call.sig, expected)


def history_signer(key: str, agent_id: str, user: Mapping[str, Any] | None, metadata: Mapping[str, Any]) -> Signer:
    """The request's Signer: what Open WebUI says this turn is (metadata's chat and message ids)."""
    return Signer(
        key,
        chat_id=_str(metadata.get("chat_id")),
        agent_id=agent_id,
        user_id=_str((user or {}).get("id")),
        turn_id=_str(metadata.get("message_id")),
    )


# --- begin agent_pipe/history.py ---
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


# --- begin agent_pipe/files.py ---
# --- files: what the user attached, read from Open WebUI's own file store ---------------------
# Open WebUI hands a pipe the chat's file references (``__metadata__["files"]``: the files of the
# whole chat plus the new message's) and removes each message's own ``files`` before the pipe
# sees ``body["messages"]``. So the pipe places each file itself: on the user message it was
# attached to (read from the stored chat, so it goes with that message in every later turn),
# else on the newest user message. The bytes come from Open WebUI's store, only for files the
# chat's user may read, and are read and encoded in a thread. Images Open WebUI already put into
# a message as ``image_url`` data parts (0.12.4's convert_url_images_to_base64 inlines every image
# reference, and fetches http ones) stay where they are, under the same rules as the files the
# pipe reads: MAX_FILE_MB, MAX_TURN_FILES_MB, the agent's ``reads``, and only raster image types.

_IGNORED_REFERENCES = ("web_search", "filesystem")  # Open WebUI's own, never the user's attachments
_ATTACHED_FILES = re.compile(r"\A<attached_files>\n(?:<file [^\n]*/>\n)*</attached_files>\n\n")


@dataclass(frozen=True)
class StoredFile:
    """The fields of an Open WebUI file record the pipe uses."""

    id: str
    owner: str
    name: str
    mime: str
    size: int  # bytes; -1 when the record does not say
    path: str


@dataclass
class Attachment:
    """A file read for the agent; ``data`` is its base64 text (ASCII bytes, or pieces of it)."""

    id: str
    name: str
    mime: str
    size: int
    data: bytes | tuple[bytes, ...]
    token: str = ""  # what the request body holds in the data's place until encode_body

    @property
    def kind(self) -> str:
        return "image" if self.mime in RASTER_IMAGES else "document"

    @property
    def metadata(self) -> dict[str, Any]:
        return {"filename": self.name, "file_id": self.id, "size": self.size}


@dataclass(frozen=True)
class LeftOut:
    """A file the agent does not get, and why: the agent gets this line, and the user sees it.
    The name (the user's words) is quoted as a JSON string, so it cannot end the line early."""

    name: str
    reason: str
    line: str = ""  # the whole line instead (files left out together)

    @property
    def text(self) -> str:
        if self.line:
            return self.line
        return f"[The attached file {json.dumps(self.name, ensure_ascii=False)} was left out: {self.reason}.]"


def left_out_notice(left_out: "list[LeftOut]") -> str:
    """One warning for everything left out of a request (not a toast per file)."""
    lines = [left.text for left in left_out[:3]]
    if len(left_out) > 3:
        lines.append(f"… and {len(left_out) - 3} more.")
    return "\n".join(lines)


@dataclass(frozen=True)
class FileLimits:
    """The MAX_FILE_MB and MAX_TURN_FILES_MB valves in bytes."""

    per_file: int
    per_turn: int


@dataclass
class InboundFiles:
    """A turn's history with its files placed, what was read, and what was left out."""

    history: list[Mapping[str, Any]]
    attachments: list[Attachment] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)


def _mb(size: int) -> str:
    return f"{size / MB:.1f} MB" if size < 10 * MB else f"{size / MB:.0f} MB"


def _limit_mb(limit: int) -> str:
    return f"{limit / MB:g} MB"


def kinds_read(reads: Iterable[str] | None) -> set[str] | None:
    """What an agent's ``reads`` lets it get ("document", "image"); None: not declared, all."""
    taken = None if reads is None else {"documents": "document", "images": "image"}
    kinds = None if reads is None or taken is None else {taken[r] for r in reads if r in taken}
    return kinds


def _is_image_part(part: Any) -> bool:
    return isinstance(part, Mapping) and part.get("type") in ("image_url", "input_image")


def screen_inline_images(
    history: list[Mapping[str, Any]], limits: FileLimits, kinds: set[str] | None
) -> tuple[list[Mapping[str, Any]], list[LeftOut], int]:
    """The history with each image part of a user message that breaks a rule replaced by the line
    that says why, what was left out, and what is left of the turn's budget.

    An ``http(s)`` image stays a link. A ``data:`` part passes only as a raster image
    (RASTER_IMAGES: never ``text/html`` or SVG), for an agent that reads images, within MAX_FILE_MB,
    and, newest message first, within MAX_TURN_FILES_MB; anything else is left out.
    """
    budget = limits.per_turn
    out, left_out = list(history), []
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        content = message.get("content") if isinstance(message, Mapping) else None
        if not (isinstance(content, list) and message.get("role") == "user" and any(map(_is_image_part, content))):
            continue
        pieces: list[Any] = []
        number = 0
        for part in content:
            if not _is_image_part(part):
                pieces.append(part)
                continue
            number += 1
            url = _image_url(part)
            if url.startswith(("https://", "http://")):
                pieces.append(part)
                continue
            reason, size = _inline_image_reason(url, limits, budget, kinds)
            if reason:
                left = LeftOut(f"image {number}", reason)
                left_out.append(left)
                pieces.append({"type": "text", "text": left.text})
            else:
                budget -= size
                pieces.append(part)
        out[index] = {**message, "content": pieces}
    return out, left_out, budget


def _inline_image_reason(url: str, limits: FileLimits, budget: int, kinds: set[str] | None) -> tuple[str, int]:
    """Why an inline image is left out ("" when it is not), and its size in bytes."""
    inline = _data_uri(url)
    mime = inline[0].split(";")[0].strip().lower() if inline else ""
    if inline is None or mime not in RASTER_IMAGES:
        return "it is not an image an agent gets (only PNG, JPEG, GIF and WebP are)", 0
    if kinds is not None and "image" not in kinds:
        return "this agent does not read images", 0
    data = inline[1]
    size = len(data) * 3 // 4 - data[-2:].count("=")
    if size > limits.per_file:
        return f"{_mb(size)} is over the limit of {_limit_mb(limits.per_file)} per file", size
    if size > budget:
        return f"the files of this message would be over the limit of {_limit_mb(limits.per_turn)}", size
    return "", size


def _reference_id(ref: Mapping[str, Any]) -> str:
    nested = ref.get("file")
    value = ref.get("id") or (nested.get("id") if isinstance(nested, Mapping) else None)
    return value if isinstance(value, str) else ""


def _reference_name(ref: Mapping[str, Any]) -> str:
    nested = ref.get("file")
    name = ref.get("name") or (nested.get("filename") if isinstance(nested, Mapping) else None)
    name = name if isinstance(name, str) and name.strip() else _reference_id(ref) or "unnamed"
    name = " ".join(name.split())
    return name if len(name) <= 120 else name[:119] + "…"


def _is_image_reference(ref: Mapping[str, Any]) -> bool:
    """Open WebUI turns these into ``image_url`` parts of their message itself."""
    meta = ref.get("meta")
    mime = ref.get("content_type") or (meta.get("content_type") if isinstance(meta, Mapping) else "")
    return ref.get("type") == "image" or (isinstance(mime, str) and mime in RASTER_IMAGES)


def stored_branch(messages: Mapping[str, Any], message_id: str) -> list[Mapping[str, Any]]:
    """The messages of the branch that ends at ``message_id``, oldest first (a stored chat's
    ``history.messages``: id -> message with ``parentId``)."""
    chain: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    current = messages.get(message_id) if message_id else None
    while isinstance(current, Mapping) and len(chain) < 10_000:
        chain.append(current)
        parent = current.get("parentId")
        if not isinstance(parent, str) or parent in seen:
            break
        seen.add(parent)
        current = messages.get(parent)
    return chain[::-1]


def stored_user_files(messages: Mapping[str, Any], message_id: str) -> list[list[Mapping[str, Any]]] | None:
    """The ``files`` of each user message on the branch that ends at ``message_id``, oldest first."""
    chain = stored_branch(messages, message_id)
    if not chain:
        return None
    return [
        [f for f in (m.get("files") or []) if isinstance(f, Mapping)] if isinstance(m.get("files"), list) else []
        for m in chain
        if m.get("role") == "user"
    ]


def place_files(
    history: list[Mapping[str, Any]],
    chat_files: Iterable[Any],
    stored: list[list[Mapping[str, Any]]] | None,
) -> dict[int, list[Mapping[str, Any]]]:
    """Which user message (index in ``history``) each file reference goes with.

    A message's own ``files`` first (releases and clients that keep them), then the stored chat's
    user messages matched from the newest, then the rest of ``chat_files`` on the newest user
    message. The image references of a message that Open WebUI already gave ``image_url`` data
    parts are left to those parts.
    """
    users = [i for i, m in enumerate(history) if isinstance(m, Mapping) and m.get("role") == "user"]
    placed: dict[int, list[Mapping[str, Any]]] = {}
    seen: set[str] = set()

    def put(index: int, refs: Iterable[Any], *, images: bool) -> None:
        for ref in refs:
            if not isinstance(ref, Mapping) or ref.get("type") in _IGNORED_REFERENCES:
                continue
            key = _reference_id(ref) or _reference_name(ref)
            if key in seen:
                continue
            seen.add(key)
            if images or not _is_image_reference(ref):
                placed.setdefault(index, []).append(ref)

    for index in users:
        own = history[index].get("files")
        if isinstance(own, list):
            put(index, own, images=not _has_inline_images(history[index]))
    for index, refs in zip(reversed(users), reversed(stored or []), strict=False):
        put(index, refs, images=not _has_inline_images(history[index]))
    if users:
        put(users[-1], chat_files if isinstance(chat_files, list) else [], images=True)
    return placed


def _has_inline_images(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(part, Mapping) and part.get("type") == "image_url" and _image_url(part).startswith("data:")
        for part in content
    )


def _image_url(part: Mapping[str, Any]) -> str:
    image = part.get("image_url")
    return _str(image.get("url") if isinstance(image, Mapping) else image)


def with_files(
    history: list[Mapping[str, Any]], parts: Mapping[int, list["Attachment | LeftOut"]]
) -> list[Mapping[str, Any]]:
    """The history with each message's files at the end of its content, and without the
    ``<attached_files>`` list Open WebUI writes into the text for its own tools."""
    out: list[Mapping[str, Any]] = []
    for index, message in enumerate(history):
        files = parts.get(index)
        content = message.get("content") if isinstance(message, Mapping) else None
        listed = isinstance(content, str) and content.startswith("<attached_files>")
        if not files and not listed and not (isinstance(content, list) and _lists_attached_files(content)):
            out.append(message)
            continue
        pieces: list[Any] = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        pieces = [_without_file_list(piece) for piece in pieces]
        pieces.extend(p if isinstance(p, Attachment) else {"type": "text", "text": p.text} for p in files or ())
        out.append({**message, "content": pieces})
    return out


def _lists_attached_files(content: list[Any]) -> bool:
    first = content[0] if content else None
    return isinstance(first, Mapping) and _str(first.get("text")).startswith("<attached_files>")


def _without_file_list(piece: Any) -> Any:
    if isinstance(piece, Mapping) and piece.get("type") == "text":
        return {**piece, "text": _ATTACHED_FILES.sub("", _str(piece.get("text")), count=1)}
    return piece


def _data_uri(url: str) -> tuple[str, str] | None:
    """``data:<mime>;base64,<data>`` -> (mime, data)."""
    head, comma, data = url.partition(",")
    if not comma or not head.startswith("data:") or not head.endswith(";base64"):
        return None
    return head[5:-7] or "application/octet-stream", data


def agui_content(content: Any) -> Any:
    """A user message's content for AG-UI: text stays a string; files and images become
    ``document``/``image`` parts (ag-ui-protocol 0.1.22) next to the text parts."""
    if not isinstance(content, list):
        return _str(content)
    parts: list[dict[str, Any]] = []
    rich = False
    for part in content:
        if isinstance(part, Attachment):
            rich = True
            source = {"type": "data", "value": part.token, "mimeType": part.mime}
            parts.append({"type": part.kind, "source": source, "metadata": part.metadata})
        elif isinstance(part, Mapping) and part.get("type") == "text":
            parts.append({"type": "text", "text": _str(part.get("text"))})
        elif isinstance(part, Mapping) and part.get("type") == "image_url":
            url = _image_url(part)
            inline = _data_uri(url)
            if inline is not None and inline[0] in RASTER_IMAGES:  # screen_inline_images left out the rest
                rich = True
                parts.append({"type": "image", "source": {"type": "data", "value": inline[1], "mimeType": inline[0]}})
            elif url.startswith(("https://", "http://")):
                rich = True
                parts.append({"type": "image", "source": {"type": "url", "value": url}})
    if not rich:
        return "\n".join(p["text"] for p in parts)
    return [p for p in parts if p["type"] != "text" or p["text"]]


def openai_content(content: Any) -> Any:
    """A user message's content for an OpenAI backend: a document as a ``file`` part with a data
    URI, an image as ``image_url``; everything else as it came."""
    if not isinstance(content, list) or not any(isinstance(p, Attachment) for p in content):
        return content
    out: list[Any] = []
    for part in content:
        if not isinstance(part, Attachment):
            out.append(part)
        elif part.kind == "image":
            out.append({"type": "image_url", "image_url": {"url": f"data:{part.mime};base64,{part.token}"}})
        else:
            out.append(
                {"type": "file", "file": {"filename": part.name, "file_data": f"data:{part.mime};base64,{part.token}"}}
            )
    return out


def with_openai_files(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI messages with each user message's files as ``file``/``image_url`` parts."""
    return [{**m, "content": openai_content(m.get("content"))} if m.get("role") == "user" else m for m in messages]


# --- begin agent_pipe/file_store.py ---
@dataclass(frozen=True)
class RequestBody:
    """A request body in pieces (a file's base64 stays in the pieces it was encoded in)."""

    pieces: tuple[bytes, ...]

    @property
    def size(self) -> int:
        return sum(map(len, self.pieces))

    async def stream(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece


def encode_body(payload: Mapping[str, Any], attachments: Iterable[Attachment]) -> RequestBody:
    """The request body as JSON with each file's base64 put where its token stands.

    Called in a thread. The base64 is never copied (not into a string, not into one joined body):
    joining megabytes, like encoding them in one call, holds the GIL, and Open WebUI's event loop
    with it, for tens of milliseconds.
    """
    by_token = {json.dumps(a.token)[1:-1]: a for a in attachments}
    text = json.dumps(payload)
    if not by_token:
        return RequestBody((text.encode(),))
    pattern = re.compile("|".join(re.escape(token) for token in by_token))
    pieces: list[bytes] = []
    position = 0
    for match in pattern.finditer(text):
        pieces.append(text[position : match.start()].encode())
        data = by_token[match.group(0)].data
        pieces.extend(data if isinstance(data, tuple) else (data,))
        position = match.end()
    pieces.append(text[position:].encode())
    return RequestBody(tuple(pieces))


async def _call(function: Callable[..., Any], *args: Any) -> Any:
    """Call Open WebUI's model API: asynchronous in 0.12, synchronous (run in a thread) in 0.6."""
    if asyncio.iscoroutinefunction(function):
        return await function(*args)
    result = await asyncio.to_thread(function, *args)
    return await result if asyncio.iscoroutine(result) else result


def _takes_keyword(function: Callable[..., Any], name: str) -> bool:
    """Whether a function of Open WebUI's takes a keyword this release may not have."""
    try:
        return name in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


class OpenWebUIStore:
    """Open WebUI's own records (chats, files, users, groups), read through its modules.

    Imported inside the methods: this file is loaded by Open WebUI, and the tests load it alone.
    The API differs between releases (0.6: synchronous models and ``routers.files``' access rule;
    0.12: asynchronous models and ``utils.access_control.files``); ``_call`` takes both.
    """

    async def stored_chat(self, chat_id: str, user_id: str, message_id: str) -> "StoredChat | None":
        """The stored chat as it stands at ``message_id``; None for a chat that is not stored or not
        this user's. One read: ``StoredChat`` answers both the files and the agent's ids from it."""
        messages = await self._stored_messages(chat_id, user_id) if message_id else None
        return None if messages is None else StoredChat(messages, message_id)

    async def _stored_messages(self, chat_id: str, user_id: str) -> Mapping[str, Any] | None:
        """The stored chat's messages (id -> message), only for the chat's own user."""
        if not chat_id or chat_id.startswith("local:"):
            return None
        from open_webui.models.chats import Chats

        chat = await _call(Chats.get_chat_by_id, chat_id)
        if chat is None or getattr(chat, "user_id", None) != user_id:
            return None
        messages = None
        if hasattr(Chats, "get_messages_map_by_chat_id"):
            messages = await _call(Chats.get_messages_map_by_chat_id, chat_id)
        if not messages:
            messages = ((getattr(chat, "chat", None) or {}).get("history") or {}).get("messages") or {}
        return messages

    async def file(self, file_id: str) -> StoredFile | None:
        from open_webui.models.files import Files

        record = await _call(Files.get_file_by_id, file_id)
        if record is None:
            return None
        meta = getattr(record, "meta", None) or {}
        size = meta.get("size")
        return StoredFile(
            id=record.id,
            owner=record.user_id,
            name=_str(meta.get("name") or getattr(record, "filename", "") or record.id),
            mime=_str(meta.get("content_type") or "application/octet-stream").split(";")[0].strip().lower(),
            size=size if isinstance(size, int) else -1,
            path=_str(getattr(record, "path", "")),
        )

    async def shared_with(self, file_id: str, user_id: str) -> bool:
        """Open WebUI's own rule for a file that is not the user's (a knowledge base, a shared
        chat or model, a channel: ``routers/files.py``)."""
        try:
            from open_webui.utils.access_control.files import has_access_to_file
        except ImportError:
            try:
                from open_webui.routers.files import has_access_to_file
            except ImportError:
                return False
        from open_webui.models.users import Users

        user = await _call(Users.get_user_by_id, user_id)
        return user is not None and bool(await _call(has_access_to_file, file_id, "read", user))

    async def groups(self, user_id: str) -> list[dict[str, str]]:
        """The user's groups (ids and names), as Open WebUI's own access rules count them: where
        groups nest (0.12), a member of a group is a member of every group above it as well."""
        from open_webui.models.groups import Groups

        lookup = Groups.get_groups_by_member_id
        if _takes_keyword(lookup, "include_inherited"):
            found = await _call(functools.partial(lookup, user_id, include_inherited=True))
        else:
            found = await _call(lookup, user_id)
        return [{"id": _str(g.id), "name": _str(g.name)} for g in found or ()]

    async def read(self, record: StoredFile, limit: int) -> tuple[int, tuple[bytes, ...]]:
        """(size, base64 of the bytes in pieces), in a thread; FileTooLarge past ``limit`` bytes."""
        from open_webui.storage.provider import Storage

        return await asyncio.to_thread(_read_base64, Storage.get_file, record.path, limit)


@dataclass(frozen=True)
class StoredChat:
    """A stored chat's messages (id -> message) and the message being answered."""

    messages: Mapping[str, Any]
    message_id: str

    def files(self) -> list[list[Mapping[str, Any]]] | None:
        """Each user message's files on the branch up to the message."""
        return stored_user_files(self.messages, self.message_id)

    def answers(self) -> list[list[Mapping[str, Any]]] | None:
        """The agent's message ids each earlier answer on the branch was stored with (agent_ids.py)."""
        return stored_answers(self.messages, self.message_id)


class TurnChat:
    """One turn's stored chat, read from Open WebUI at most once and only when a part of the turn
    asks: placing files and the agent's own ids both need it, and each read is a database query
    for the chat and its messages. A failed read counts as no stored chat (logged once)."""

    def __init__(self, store: Any, chat_id: str, user_id: str, message_id: str) -> None:
        self._store, self._where = store, (chat_id, user_id, message_id)
        self._read: asyncio.Future[StoredChat | None] | None = None

    async def get(self) -> StoredChat | None:
        if self._read is None:  # one read, however many ask and whenever (at once, too)
            self._read = asyncio.ensure_future(self._stored_chat())
        return await self._read

    async def _stored_chat(self) -> StoredChat | None:
        try:
            chat: StoredChat | None = await self._store.stored_chat(*self._where)
            return chat
        except Exception as exc:  # the stored chat only places files and ids; the turn goes on
            # an ImportError outside Open WebUI (a test, a script) is simply no stored chat;
            # inside it, a module of Open WebUI's moved
            if not isinstance(exc, ImportError) or "open_webui" in sys.modules:
                log.warning("aihub_agent_pipe: reading the stored chat failed (%s)", type(exc).__name__)
            return None


def stored_answers(messages: Mapping[str, Any], message_id: str) -> list[list[Mapping[str, Any]]] | None:
    """Per assistant message on the branch up to ``message_id`` that Open WebUI gives a model (one
    with content or output: ``load_messages_from_db``), the agent's ids it was stored with."""
    chain = stored_branch(messages, message_id)
    if not chain:
        return None
    return [
        stored_agent_messages(m)
        for m in chain
        if m.get("role") == "assistant" and (m.get("content") or m.get("output")) and m.get("id") != message_id
    ]


def _read_base64(locate: Callable[[str], str], path: str, limit: int) -> tuple[int, tuple[bytes, ...]]:
    """(size, base64 pieces) of a stored file. In blocks: one ``b64encode`` of 10 MB holds the GIL
    for ~30 ms, which the event loop would wait out; a block takes well under a millisecond."""
    import base64

    local = locate(path)
    pieces, size = [], 0
    with open(local, "rb") as handle:
        while block := handle.read(BASE64_BLOCK):
            size += len(block)
            if size > limit:
                raise FileTooLarge(os.path.getsize(local))
            pieces.append(base64.b64encode(block))
    return size, tuple(pieces)


async def read_files(
    placed: Mapping[int, list[Mapping[str, Any]]],
    *,
    store: Any,
    user: Mapping[str, Any],
    limits: FileLimits,
    reads: Iterable[str] | None,
    budget: int | None = None,
    max_files: int = MAX_FILE_REFERENCES,
) -> dict[int, list[Attachment | LeftOut]]:
    """Each placed reference read for the agent, or the reason it is left out.

    The newest message's files are read first, so they are the ones that fit the turn's limit
    (``budget``: what is left of it, limits.per_turn by default). At most ``max_files`` references
    are looked up at all; the rest are named by one line on the newest message.
    """
    kinds = kinds_read(reads)
    budget = limits.per_turn if budget is None else budget
    nonce = random_hex()[:12]
    out: dict[int, list[Attachment | LeftOut]] = {}
    looked, skipped = 0, 0
    for index in sorted(placed, reverse=True):
        parts: list[Attachment | LeftOut] = []
        for ref in placed[index]:
            if looked >= max_files:
                skipped += 1
                continue
            looked += 1
            part = await _read_one(ref, store=store, user=user, limits=limits, budget=budget, kinds=kinds)
            if isinstance(part, Attachment):
                budget -= part.size
                part.token = f"\x00aihub-file-{nonce}-{index}-{len(parts)}\x00"
            parts.append(part)
        out[index] = parts
    if skipped:
        line = f"[{skipped} more attached files were left out: an agent gets at most {max_files} files per request.]"
        out[max(placed)].append(LeftOut("", "", line=line))
    return out


async def _read_one(
    ref: Mapping[str, Any],
    *,
    store: Any,
    user: Mapping[str, Any],
    limits: FileLimits,
    budget: int,
    kinds: set[str] | None,
) -> Attachment | LeftOut:
    name = _reference_name(ref)
    kind = ref.get("type")
    if kind not in FILE_REFERENCE_TYPES:
        return LeftOut(name, f"an agent gets single files, not a {_str(kind) or 'reference'} (ask for its files)")
    file_id = _reference_id(ref)
    user_id = _str(user.get("id"))
    try:
        record = await store.file(file_id) if file_id else None
        allowed = record is not None and (
            record.owner == user_id or user.get("role") == "admin" or await store.shared_with(file_id, user_id)
        )
        if record is None or not allowed:
            return LeftOut(name, "it is not a file you may read")  # the same words either way: no owner, no probe
        name = " ".join(record.name.split())[:120] or name
        kind_name = "image" if record.mime in RASTER_IMAGES else "document"
        if kinds is not None and kind_name not in kinds:
            return LeftOut(name, f"this agent does not read {kind_name}s")
        if record.size > limits.per_file:
            return LeftOut(name, f"{_mb(record.size)} is over the limit of {_limit_mb(limits.per_file)} per file")
        if record.size > budget:
            return LeftOut(name, f"the files of this message would be over the limit of {_limit_mb(limits.per_turn)}")
        size, data = await store.read(record, min(limits.per_file, budget))
    except FileTooLarge as exc:
        over = exc.size > limits.per_file
        limit = f"{_limit_mb(limits.per_file)} per file" if over else f"{_limit_mb(limits.per_turn)} per message"
        return LeftOut(name, f"{_mb(exc.size)} is over the limit of {limit}")
    except Exception as exc:  # a store that fails must not fail the chat; the agent is told
        log.warning("aihub_agent_pipe: reading an attached file failed (%s)", type(exc).__name__)
        return LeftOut(name, "Open WebUI could not read it")
    return Attachment(id=record.id, name=name, mime=record.mime, size=size, data=data)


async def _notify(emitter: Any, text: str) -> None:
    """A warning the user sees (a toast), next to the status line."""
    if emitter is None:
        return
    try:
        await emitter({"type": "notification", "data": {"type": "warning", "content": text}})
    except Exception:
        log.debug("aihub_agent_pipe: event emitter failed", exc_info=True)


# --- begin agent_pipe/request.py ---
# From provisioner/contract.py (inlined: the uploaded file cannot import provision).
METADATA_KEY = "aihub_requested_features"
RESERVED_HEADER_PREFIX = "x-openwebui-"
RESERVED_HEADERS = (
    "authorization",
    "proxy-authorization",
    "cookie",
    "host",
    "content-type",
    "content-length",
    "transfer-encoding",
    "connection",
    "accept",
    "traceparent",
    "tracestate",
    "x-aihub-identity",
)


# === the request ==================================================================================


# --- who asks, in which chat, under which trace: identity, ids, trace context, user context ----
# Open WebUI's own connections say who the user is in headers (``open_webui/utils/headers.py``):
# with ENABLE_FORWARD_USER_INFO_HEADERS one HS256 JWT when FORWARD_USER_INFO_HEADER_JWT_SECRET is
# set, else plain X-OpenWebUI-User-* headers. The pipe sends the same, read from the server's
# environment itself (so it works on every release; read once, as Open WebUI reads it), and adds claims of its own (groups, model,
# chat and message ids; not ``aud``, which would make PyJWT without an audience reject the token).
# With a signing key (the IDENTITY_KEYS valve or AIHUB_IDENTITY_PRIVATE_KEY) it also sends an
# EdDSA token for this agent alone (``aud``): with a shared HS256 secret any agent could mint one
# for another. The tokens are made by hand (a JWT is three base64url parts): no import per chat.


@dataclass(frozen=True)
class ForwardSettings:
    """Open WebUI's user-info forwarding settings (env.py names and defaults)."""

    enabled: bool
    secret: str
    jwt_header: str
    lifetime: int
    user_headers: tuple[str, str, str, str]  # name, id, email, role
    chat_header: str
    message_header: str

    def header_names(self) -> set[str]:
        """Every header these settings name, lowercased: the ones an OAuth token may not take."""
        return {h.lower() for h in (*self.user_headers, self.jwt_header, self.chat_header, self.message_header)}


_IDENTITY_ENVIRONMENT = (
    "ENABLE_FORWARD_USER_INFO_HEADERS",
    "FORWARD_USER_INFO_HEADER_JWT_SECRET",
    "FORWARD_USER_INFO_HEADER_JWT",
    "FORWARD_USER_INFO_HEADER_JWT_EXPIRES_SECONDS",
    "FORWARD_USER_INFO_HEADER_USER_NAME",
    "FORWARD_USER_INFO_HEADER_USER_ID",
    "FORWARD_USER_INFO_HEADER_USER_EMAIL",
    "FORWARD_USER_INFO_HEADER_USER_ROLE",
    "FORWARD_SESSION_INFO_HEADER_CHAT_ID",
    "FORWARD_SESSION_INFO_HEADER_MESSAGE_ID",
    "AIHUB_IDENTITY_PRIVATE_KEY",
    "AIHUB_IDENTITY_KEY_ID",
)


@functools.lru_cache(maxsize=1)
def server_environment() -> Mapping[str, str]:
    """The server's identity settings, read once per process: Open WebUI reads its own (env.py)
    once at start, so a change needs a restart there as well. Read per chat, a dozen unset
    variables would cost the first token ~0.08 ms (an unset read raises inside ``os.environ``)."""
    return types.MappingProxyType({name: os.environ[name] for name in _IDENTITY_ENVIRONMENT if name in os.environ})


@functools.lru_cache(maxsize=1)
def server_forward_settings() -> ForwardSettings:
    return forward_settings(server_environment())


def forward_settings(environ: Mapping[str, str]) -> ForwardSettings:
    """Open WebUI's forwarding settings from an environment (its names, its defaults)."""
    get = environ.get
    try:
        lifetime = int(get("FORWARD_USER_INFO_HEADER_JWT_EXPIRES_SECONDS") or 300)
    except ValueError:
        lifetime = 300
    prefix = "FORWARD_USER_INFO_HEADER_USER_"
    return ForwardSettings(
        enabled=(get("ENABLE_FORWARD_USER_INFO_HEADERS") or "false").lower() == "true",
        secret=(get("FORWARD_USER_INFO_HEADER_JWT_SECRET") or "").strip(),
        jwt_header=get("FORWARD_USER_INFO_HEADER_JWT") or "X-OpenWebUI-User-Jwt",
        lifetime=lifetime,
        user_headers=(
            get(prefix + "NAME") or "X-OpenWebUI-User-Name",
            get(prefix + "ID") or "X-OpenWebUI-User-Id",
            get(prefix + "EMAIL") or "X-OpenWebUI-User-Email",
            get(prefix + "ROLE") or "X-OpenWebUI-User-Role",
        ),
        chat_header=get("FORWARD_SESSION_INFO_HEADER_CHAT_ID") or "X-OpenWebUI-Chat-Id",
        message_header=get("FORWARD_SESSION_INFO_HEADER_MESSAGE_ID") or "X-OpenWebUI-Message-Id",
    )


@dataclass(frozen=True)
class SigningKey:
    kid: str
    key: Any  # cryptography's Ed25519PrivateKey
    pem: str  # masked by the scrubber


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# json.dumps with any argument of its own builds a new JSONEncoder per call (~4 µs a token here)
_compact_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


@functools.lru_cache(maxsize=16)
def _jwt_header(alg: str, kid: str = "") -> str:
    """A JWT's first part, encoded once per algorithm and key id: it is the same for every chat."""
    header = {"alg": alg, "typ": "JWT", **({"kid": kid} if kid else {})}
    return _b64url(_compact_json(header).encode())


def _jwt_input(header: str, claims: Mapping[str, Any]) -> bytes:
    return f"{header}.{_b64url(_compact_json(claims).encode())}".encode()


def mint_hs256(claims: Mapping[str, Any], secret: str) -> str:
    """Open WebUI's forwarded-user JWT (``_mint_forward_user_jwt``): HS256, ``typ: JWT``."""
    signing_input = _jwt_input(_jwt_header("HS256"), claims)
    signature = hmac.digest(secret.encode(), signing_input, "sha256")
    return f"{signing_input.decode()}.{_b64url(signature)}"


def mint_eddsa(claims: Mapping[str, Any], key: SigningKey) -> str:
    signing_input = _jwt_input(_jwt_header("EdDSA", key.kid), claims)
    return f"{signing_input.decode()}.{_b64url(key.key.sign(signing_input))}"


@functools.lru_cache(maxsize=8)
def _load_signing_key(pem: str, kid: str) -> SigningKey | None:
    """An Ed25519 private key (PKCS8 PEM), loaded once; None when it does not load."""
    try:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import load_pem_private_key

        key = load_pem_private_key(pem.encode(), password=None)
    except Exception:
        log.warning("aihub_agent_pipe: the identity signing key does not load (an Ed25519 PKCS8 PEM is expected)")
        return None
    if not isinstance(key, Ed25519PrivateKey) or not kid:
        log.warning("aihub_agent_pipe: the identity signing key is not Ed25519 or has no key id")
        return None
    return SigningKey(kid=kid, key=key, pem=pem)


@functools.lru_cache(maxsize=8)
def _valve_signing_key(text: str) -> tuple[str, str]:
    """(PEM, kid) of the IDENTITY_KEYS valve's ``signing`` entry; empty when there is none."""
    try:
        signing = (json.loads(text) if text else {}).get("signing") or {}
        return _str(signing.get("private_key_pem")), _str(signing.get("kid"))
    except (ValueError, AttributeError):
        log.warning("aihub_agent_pipe: the IDENTITY_KEYS valve is not valid JSON")
        return "", ""


@functools.lru_cache(maxsize=8)
def _valve_staged_pem(text: str) -> str:
    """The PEM of the IDENTITY_KEYS valve's ``staged`` entry (published, never signs); empty when none."""
    try:
        staged = (json.loads(text) if text else {}).get("staged") or {}
        return _str(staged.get("private_key_pem"))
    except (ValueError, AttributeError):
        return ""


def identity_secrets(valve: str, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """What signs identities (the HS256 secret, the private keys, the staged one too): masked
    like the agents' keys."""
    environ = server_environment() if environ is None else environ
    pems = (_valve_signing_key(valve)[0], _valve_staged_pem(valve)) if valve else ()
    values = (environ.get("FORWARD_USER_INFO_HEADER_JWT_SECRET") or "", environ.get(IDENTITY_KEY_ENV) or "", *pems)
    return tuple(v.strip() for v in values if v.strip())


def signing_key(valve: str, environ: Mapping[str, str] | None = None) -> SigningKey | None:
    """The server's AIHUB_IDENTITY_PRIVATE_KEY (with AIHUB_IDENTITY_KEY_ID) wins over the valve."""
    environ = server_environment() if environ is None else environ
    pem = environ.get(IDENTITY_KEY_ENV) or ""
    if pem.strip():
        return _load_signing_key(pem, environ.get(IDENTITY_KID_ENV) or "server")
    pem, kid = _valve_signing_key(valve)
    return _load_signing_key(pem, kid) if pem else None


def identity_claims(
    user: Mapping[str, Any],
    groups: Iterable[Mapping[str, str]],
    *,
    model: str,
    chat_id: str,
    message_id: str,
    now: int,
    lifetime: int,
) -> dict[str, Any]:
    """Open WebUI's claims (``sub, email, name, role, iss, iat, exp``) plus the pipe's own."""
    return {
        "sub": _str(user.get("id")),
        "email": _str(user.get("email")),
        "name": _str(user.get("name")),
        "role": _str(user.get("role")),
        "iss": "open-webui",
        "iat": now,
        "exp": now + lifetime,
        "groups": [{"id": _str(g.get("id")), "name": _str(g.get("name"))} for g in groups],
        "model": model,
        "chat_id": chat_id,
        "message_id": message_id,
    }


class GroupsCache:
    """Each user's groups as last read, for GROUPS_TTL_SECONDS; a failed read is not kept."""

    def __init__(self, ttl: float = GROUPS_TTL_SECONDS, users: int = GROUPS_CACHE_USERS) -> None:
        self.ttl, self.users = ttl, users
        self._read: dict[str, tuple[float, list[dict[str, str]]]] = {}

    async def groups(self, store: Any, user_id: str) -> list[dict[str, str]]:
        now = time.monotonic()
        kept = self._read.get(user_id)
        if kept is not None and now < kept[0]:
            return kept[1]
        found = await store.groups(user_id)
        if len(self._read) >= self.users:
            self._read.clear()
        self._read[user_id] = (now + self.ttl, found)
        return found


def needs_groups(agent: "AgentSpec", settings: ForwardSettings, key: SigningKey | None) -> bool:
    """Whether a token will be minted (only tokens carry the groups: a store read is skipped otherwise)."""
    return agent.identity != "none" and (key is not None or (settings.enabled and bool(settings.secret)))


def identity_headers(
    agent: "AgentSpec", claims: Mapping[str, Any], settings: ForwardSettings, key: SigningKey | None
) -> dict[str, str]:
    """The identity headers for one request; IdentityRequired when ``signed`` cannot be kept."""
    if agent.identity == "none":
        return {}
    headers: dict[str, str] = {}
    if settings.enabled and settings.secret:
        headers[settings.jwt_header] = mint_hs256(claims, settings.secret)
    elif settings.enabled and agent.identity != "signed":  # Open WebUI's plain headers: never under "signed"
        name, user_id, email, role = settings.user_headers
        headers[name] = quote(_str(claims["name"]).strip(), safe=" ")
        headers[user_id] = _str(claims["sub"])
        headers[email] = quote(_str(claims["email"]).strip(), safe="@+ ")
        headers[role] = _str(claims["role"])
    if key is not None:
        own = {**claims, "iss": IDENTITY_ISSUER, "aud": claims["model"]}
        headers[IDENTITY_HEADER] = mint_eddsa(own, key)
    if agent.identity == "signed" and not any(h in headers for h in (settings.jwt_header, IDENTITY_HEADER)):
        raise IdentityRequired(
            "This agent accepts only a signed identity, and no key is set: an administrator has to set "
            "FORWARD_USER_INFO_HEADER_JWT_SECRET (with ENABLE_FORWARD_USER_INFO_HEADERS=true) or the pipe's "
            "identity key (provision sync writes it). Nothing was sent to the agent."
        )
    return headers


def session_headers(settings: ForwardSettings, chat_id: str, message_id: str) -> dict[str, str]:
    """Open WebUI's chat and message id headers (its names), for the OpenAI transport."""
    headers = {}
    if chat_id:
        headers[settings.chat_header] = chat_id
    if message_id:
        headers[settings.message_header] = message_id
    return headers


def traceparent() -> str:
    """A W3C traceparent: the child of Open WebUI's current OpenTelemetry span when its tracing is
    on (ENABLE_OTEL_TRACES imports opentelemetry; the pipe never imports it), else a new trace."""
    otel = sys.modules.get("opentelemetry.trace")
    if otel is not None:
        try:
            context = otel.get_current_span().get_span_context()
            if context.is_valid:
                return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"
        except Exception:
            log.debug("aihub_agent_pipe: reading the current span failed", exc_info=True)
    ids = random_hex(24)  # a trace id and a span id from one read
    return f"00-{ids[:32]}-{ids[32:]}-01"


def trace_id(parent: str) -> str:
    return parent.split("-")[1] if parent.count("-") == 3 else ""


_CONTEXT_VARIABLES = (
    ("{{USER_LANGUAGE}}", "user_language", "The user's language"),
    ("{{CURRENT_DATETIME}}", "current_datetime", "The current date and time"),
    ("{{CURRENT_TIMEZONE}}", "current_timezone", "The user's timezone"),
)


def user_context(metadata: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(key, description, value) of the prompt variables the browser set (``metadata["variables"]``);
    an API client sets none, so the current time is then the server's, in UTC."""
    variables = metadata.get("variables")
    variables = variables if isinstance(variables, Mapping) else {}
    out = []
    for name, key, description in _CONTEXT_VARIABLES:
        value = variables.get(name)
        if not (isinstance(value, str) and value.strip()) and key == "current_datetime":
            value = utc_time_text(int(time.time()))
        if isinstance(value, str) and value.strip():
            out.append((key, description, value.strip()[:200]))
    return out


@functools.lru_cache(maxsize=1)
def utc_time_text(second: int) -> str:
    """The server's time for a chat whose client set none; formatted once per second (strftime
    cost an API client's first token ~10 µs)."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(second))


# An HTTP field name (RFC 9110 token), as provision's HeaderName checks it.
_HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}")


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (provisioner/urls.py's rule); a name that only starts
    like one (``127.attacker.example``) is not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def oauth_header(agent: "AgentSpec", token: Any) -> dict[str, str]:
    """The user's OAuth access token in the backend's own header, only over https or loopback,
    and never in a header the pipe or HTTP sets itself (the rules provision validates with: the
    AGENTS valve can be edited by hand)."""
    if not agent.oauth_token_header:
        return {}
    name = agent.oauth_token_header
    lowered = name.lower()
    if not _HEADER_NAME.fullmatch(name) or lowered in RESERVED_HEADERS or lowered.startswith(RESERVED_HEADER_PREFIX):
        raise PipeConfigError(
            "The agent asks for the user's OAuth token in a header the pipe or HTTP sets itself (or in no valid "
            "header name); an administrator has to give it a header of its own. Nothing was sent to the agent."
        )
    access = token.get("access_token") if isinstance(token, Mapping) else None
    if not isinstance(access, str) or not access:
        return {}
    parts = urlsplit(agent.url)
    host = parts.hostname or ""
    if parts.scheme != "https" and not is_loopback(host):
        raise PipeConfigError(
            f"The agent asks for the user's OAuth token, and its address {_host(agent.url)} is not https: "
            "the pipe sends the token only over https (or to loopback). Nothing was sent to the agent."
        )
    return {agent.oauth_token_header: access}


@dataclass
class Turn:
    """What one request to the agent carries besides the chat: ids, trace, context, identity."""

    chat_id: str
    message_id: str
    user_message_id: str
    traceparent: str
    trace_id: str
    context: list[tuple[str, str, str]]
    user_id: str = ""  # the user's id, unless the backend asked for no identity
    headers: dict[str, str] = field(default_factory=dict)
    forwarded: dict[str, str] = field(default_factory=dict)  # AG-UI forwardedProps keys
    mask: TokenMask = field(default_factory=TokenMask)
    failure: Exception | None = None


def _oauth_secrets(token: Any) -> list[str]:
    """Every token in Open WebUI's OAuth token dict (access, refresh, id), masked even when unsent."""
    if not isinstance(token, Mapping):
        return []
    return [v for k, v in token.items() if isinstance(v, str) and k.endswith("token")]


def requested_features(metadata: Mapping[str, Any], supported: Iterable[str]) -> list[str]:
    """Features the filters put into the metadata key, kept only when the agent supports them."""
    requested = metadata.get(METADATA_KEY)
    if not isinstance(requested, list):
        return []
    allowed = set(supported)
    return list(dict.fromkeys(f for f in requested if isinstance(f, str) and f in allowed))


def openai_request(
    agent: "AgentSpec", history: Iterable[Mapping[str, Any]], signer: Signer, turn: Turn, features: list[str]
) -> dict[str, Any]:
    """A turn as an OpenAI chat completions request: the history with its files, streamed, with
    the run's usage in the final chunk; features and user context as metadata."""
    payload: dict[str, Any] = {
        "model": agent.model or agent.id,
        "messages": with_openai_files(to_openai_messages(history, signer)),
        "stream": True,
        "stream_options": {"include_usage": True},  # the final chunk then carries the usage
        "metadata": {"features": features, **{key: value for key, _, value in turn.context}},
    }
    if turn.user_id:
        payload["user"] = turn.user_id
    return payload


def agui_request(
    history: Iterable[Mapping[str, Any]],
    signer: Signer,
    turn: Turn,
    features: list[str],
    known: list[list[Mapping[str, Any]]] | None = None,
) -> dict[str, Any]:
    """A turn as an AG-UI RunAgentInput: the chat is the thread and Open WebUI's message the run
    (fresh ids for an API client's chat), user context as context, features as forwardedProps;
    earlier answers under the agent's own ids where ``known`` (the stored chat) has them."""
    return {
        "protocolVersion": AGUI_PROTOCOL_VERSION,
        "threadId": turn.chat_id or f"aihub-{random_hex()}",
        "runId": turn.message_id or f"aihub-run-{random_hex()}",
        "messages": to_agui_messages(history, signer, known),
        "tools": [],
        "context": [{"description": description, "value": value} for _, description, value in turn.context],
        "state": {},
        "forwardedProps": {"features": features, **turn.forwarded},
    }


# --- begin agent_pipe/wire.py ---
# === wire decoding: SSE, the OpenAI adapter, the event decoder ====================================


class SSEParser:
    """Server-sent events, line by line: returns an event's data when a blank line ends it."""

    def __init__(self) -> None:
        # the data lines of the event so far: AgentStream.feed holds this list, so it is cleared in
        # place, never reassigned
        self.lines: list[str] = []
        self.size = 0  # characters of data the event holds so far

    def feed(self, line: str) -> str | None:
        if not line:
            return self.flush()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if name == "data":
            value = value[1:] if value.startswith(" ") else value
            self.lines.append(value)
            self.size += len(value) + 1
        return None

    def flush(self) -> str | None:
        if not self.lines:
            return None
        data = "\n".join(self.lines)
        self.lines.clear()
        self.size = 0
        return data


class OpenAIChunkAdapter:
    """OpenAI chat-completion chunks as AG-UI-shaped events, so one recorder serves both transports.

    An OpenAI stream carries a call's result, if at all, as a ``tool`` delta right after the call.
    When text or reasoning follows calls whose results did not come, the agent ran them on its side
    and will not send them: the adapter says so (CALLS_RAN), so the text is not held below calls
    that would otherwise wait for a result until the run ends. (A result that still comes after
    that is not shown: the call's block has gone out.)
    """

    def __init__(self) -> None:
        self._calls_by_index: dict[int, str] = {}
        self._waiting: set[str] = set()  # calls started, no result seen
        self.finish_reason: str | None = None

    def events(self, chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
        error = chunk.get("error")
        if error:
            message = error.get("message") if isinstance(error, Mapping) else error
            return [{"type": "RUN_ERROR", "message": _str(message) or "The agent reported an error."}]
        out: list[dict[str, Any]] = []
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            text = delta.get("content")
            is_result = delta.get("role") == "tool" and delta.get("tool_call_id")
            said = any(isinstance(part, str) and part.strip() for part in (text, reasoning))
            if self._waiting and not is_result and said:
                self._waiting.clear()
                out.append({"type": CALLS_RAN})
            if isinstance(reasoning, str) and reasoning:
                out.append({"type": "REASONING_MESSAGE_CONTENT", "messageId": "reasoning", "delta": reasoning})
            if is_result:
                self._waiting.discard(_str(delta["tool_call_id"]))
                out.append(
                    {
                        "type": "TOOL_CALL_RESULT",
                        "toolCallId": delta["tool_call_id"],
                        "content": _parts_concatenated(text),
                    }
                )
            elif isinstance(text, str) and text:
                out.append({"type": "TEXT_MESSAGE_CONTENT", "delta": text})
            for call in delta.get("tool_calls") or []:
                index = call.get("index", len(self._calls_by_index))
                function = call.get("function") or {}
                call_id = _str(call.get("id")) or self._calls_by_index.get(index, "")
                if not call_id:
                    call_id = f"call-{random_hex()}"
                if index not in self._calls_by_index or function.get("name"):
                    self._calls_by_index[index] = call_id
                    self._waiting.add(call_id)
                    out.append(
                        {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": _str(function.get("name"))}
                    )
                if function.get("arguments"):
                    out.append({"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": _str(function["arguments"])})
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
            out.extend(openai_extras(delta))
        if isinstance(chunk.get("usage"), Mapping):  # the final chunk (stream_options.include_usage)
            out.append({"type": USAGE, "usage": chunk["usage"]})
        return out


def openai_extras(delta: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What an OpenAI delta carries beside the answer, as the events the Outbound reads."""
    annotations = delta.get("annotations")
    citations = (
        [a for a in annotations if isinstance(a, Mapping) and a.get("type") == "url_citation"]
        if isinstance(annotations, list)
        else []
    )
    out = [{"type": "CUSTOM", "name": SOURCE_EVENT, "value": citations}] if citations else []
    images = delta.get("images")
    if isinstance(images, list) and images:
        out.append({"type": "CUSTOM", "name": IMAGE_EVENT, "value": images})
    return out


# Events the pipe never reads, skipped before their JSON is parsed: ag-ui-langgraph's default
# stream sends a RAW event of its whole callback payload (1-2 KB) beside every token, and state
# snapshots can be larger than the answer. The SSE data line starts with the event's type (every
# AG-UI encoder writes "type" first), spaced or compact.
_SKIPPED_TYPES = ("RAW", "STATE_SNAPSHOT", "STATE_DELTA")
_SKIPPED = tuple(
    f'data:{space}{{"type":{gap}"{kind}"'.encode()
    for kind in _SKIPPED_TYPES
    for space in ("", " ")
    for gap in ("", " ")
)
# ag-ui-langgraph repeats the callback payload in every content event as "rawEvent", before the
# event's own fields: such an event is read from where its own fields start (the pipe never reads
# rawEvent). In JSON an unescaped '"messageId":' is always a key, and a string value cannot hold
# one: the last '},"messageId":' (or '},"subagentRunId":', which comes before it) ends rawEvent
# or a field after it; a cut that lands inside rawEvent leaves JSON that does not parse, and the
# line is then parsed whole.
_BULKY = tuple(
    (
        f'{{"type":{gap}"{kind}",{gap}"rawEvent":'.encode(),
        (f'}},{gap}"subagentRunId":{gap}'.encode(), f'}},{gap}"{key}":{gap}'.encode()),
        kind,
    )
    for kind, key in (("TEXT_MESSAGE_CONTENT", "messageId"), ("TOOL_CALL_ARGS", "toolCallId"))
    for gap in ("", " ")
)
_BULKY_STARTS = tuple(b"data: " + prefix for prefix, _, _ in _BULKY) + tuple(
    b"data:" + prefix for prefix, _, _ in _BULKY
)

# Agno reports each model request's token usage only as a RAW event of its own
# (ModelRequestCompleted, source "agno", which its encoder writes last, lines ending in "\n"):
# such a line is known by its end, so another server's RAW line costs one byte compare more, and
# only Agno's few RAW lines per run are parsed.
_AGNO_RAW_ENDS = (b'"source":"agno"}', b'"source": "agno"}')
_AGNO_COUNTS = {  # Agno's names -> the names usage_counts reads
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "total_tokens": "total_tokens",
    "reasoning_tokens": "reasoning_tokens",
    "cache_read_tokens": "cached_input_tokens",
}


def _agno_usage(line: bytes) -> dict[str, Any] | None:
    """The token counts of Agno's RAW ModelRequestCompleted event on a data line, or None."""
    _, _, data = line.partition(b":")
    event = _json_or_none(data.decode("utf-8", "replace"))
    inner = event.get("event") if isinstance(event, dict) else None
    if not isinstance(inner, dict) or inner.get("event") != "ModelRequestCompleted":
        return None
    counts = {ours: inner[theirs] for theirs, ours in _AGNO_COUNTS.items() if inner.get(theirs)}
    return counts or None


def _without_raw_event(buf: bytes, first: int, end: int) -> dict[str, Any] | None:
    """The bulky content event on the data line ``buf[first:end]`` parsed without its rawEvent, or
    None (then it is parsed whole)."""
    if buf.endswith(b"\r", first, end):
        end -= 1
    head = first + (6 if buf[first + 5] == 32 else 5)  # after "data:" and its optional space
    for prefix, (sub, key), kind in _BULKY:
        if buf.startswith(prefix, head):
            event = _fields_from(buf, buf.rfind(key, head, end), end)  # the usual: messageId right after
            if event is None:
                event = _fields_from(buf, buf.rfind(sub, head, end), end)
            if event is not None:
                event["type"] = kind
            return event
    return None


def _fields_from(body: bytes, cut: int, end: int) -> dict[str, Any] | None:
    """The event's own fields, from the key after ``cut`` (the "}," that ends rawEvent) to the end."""
    if cut < 0:
        return None
    try:
        event = json.loads("{" + body[cut + 2 : end].decode("utf-8", "replace"))
    except ValueError:
        return None
    return event if isinstance(event, dict) and isinstance(event.get("delta"), str) else None


def start_arguments(event: Mapping[str, Any]) -> str:
    """The arguments ag-ui-langgraph left out of a call's start, from the start's own rawEvent.

    ag-ui-langgraph (0.0.47) starts a call on the model's first chunk that names it and sends that
    chunk's arguments nowhere but in the TOOL_CALL_START's rawEvent (LangChain's
    on_chat_model_stream, the call being its first tool_call_chunk): a model that streams its calls
    in pieces lost their first piece, one that gives a call whole (Gemini's, any _generate-only
    model, a call without arguments) lost all of it. The pipe sends them on as the call's first
    TOOL_CALL_ARGS, so its arguments are whole in the stream and its block need not wait for the
    run's snapshot. "" for any other start."""
    raw = event.get("rawEvent")
    if not isinstance(raw, Mapping) or raw.get("event") != "on_chat_model_stream":
        return ""
    data = raw.get("data")
    chunk = data.get("chunk") if isinstance(data, Mapping) else None
    pieces = chunk.get("tool_call_chunks") if isinstance(chunk, Mapping) else None
    if not isinstance(pieces, list):
        return ""
    pieces = [p for p in pieces if isinstance(p, Mapping)]
    # the started call's own piece: by its id where the pieces carry ids, else the first
    first = next((p for p in pieces if p.get("id") == event.get("toolCallId")), None)
    if first is None and not any(p.get("id") for p in pieces):
        first = pieces[0] if pieces else None
    if first is None or first.get("name") != event.get("toolCallName"):
        return ""
    args = first.get("args")
    return args if isinstance(args, str) else ""


class AgentStream:
    """The events in an agent's response body, fed as it is read (pure: bytes in, AG-UI events out).

    AG-UI bodies are SSE whose data is an event; OpenAI bodies are SSE whose data is a chunk, made
    AG-UI-shaped by the OpenAIChunkAdapter, and ``[DONE]`` ends the run. ``feed`` is lazy: the
    first event of a large read is handled before the rest of the read is parsed. RAW and STATE_*
    events are dropped unparsed, and a content event's ``rawEvent`` is never parsed (nor passed on
    when a line had to be parsed whole). The one RAW event read is Agno's usage report (its only
    way to say what a model request cost), passed on as the run's usage so far.

    Linear in the body: a read is searched once, and the start of a line that a later read
    completes is kept as pieces, joined once when its end arrives (joining and searching it again
    on every read made a 40 MB line cost seconds of the event loop). A line or an event of more
    than ``max_event`` bytes raises EventTooLarge as soon as it is past the bound.
    """

    def __init__(self, transport: str, max_event: int = MAX_EVENT_MB * MB) -> None:
        self._parser = SSEParser()
        self._held: list[bytes] = []  # the start of a line a later read completes, in pieces
        self._held_size = 0
        self._max = max_event
        self._adapter = OpenAIChunkAdapter() if transport == "openai" else None
        self._done = False
        # lines read by their start (an OpenAI body's "type" means nothing: none)
        self._skipped, self._bulky = (_SKIPPED, _BULKY_STARTS) if self._adapter is None else ((), ())
        self._agno_usage: list[dict[str, int]] = []  # Agno's RAW usage reports so far
        self.raw_source = ""  # "agno" once a RAW event says so: which framework serves the agent

    def feed(self, raw: bytes) -> Iterator[dict[str, Any]]:
        parser, limit = self._parser, self._max
        end = raw.find(b"\n")
        if end < 0:
            self._hold(raw)
            return
        # The line is buf[first:end]: the first one joined with what earlier reads held, the others
        # read in place (a RAW line is never copied).
        buf, first = raw, 0
        if self._held:
            buf, self._held, self._held_size = b"".join((*self._held, raw[:end])), [], 0
            first, end, joined = 0, len(buf), end
        else:
            joined = end
        # Line by line as consumed, each line decoded on its own (SSE is UTF-8, and "\n" never
        # occurs inside a UTF-8 sequence): a read can hold thousands of lines, and the first
        # event must not wait for all of them to be split or decoded.
        skipped, bulky, pending = self._skipped, self._bulky, parser.lines  # pending: an unfinished event's lines
        while True:
            if end - first > limit:
                raise EventTooLarge(limit)
            start = joined + 1  # where the next line starts in this read
            if buf.startswith(skipped, first) and not pending:
                # RAW or STATE_*: never decoded nor parsed, nor its blank line
                if raw.startswith(b"\n", start):
                    start += 1
                if buf[end - 2] == 34 and buf.endswith(_AGNO_RAW_ENDS, first, end):  # 34: '"agno"}'s quote
                    self.raw_source = "agno"
                    if counts := _agno_usage(buf[first:end]):
                        self._agno_usage.append(counts)  # per model request: the run's usage is their sum
                        yield {"type": USAGE, "usage": list(self._agno_usage)}
            elif (
                buf.startswith(bulky, first)
                and not pending
                and raw.startswith(b"\n", start)
                and (event := _without_raw_event(buf, first, end)) is not None
            ):
                start += 1  # a content event read from its own fields on, rawEvent never parsed
                yield event
            else:
                text = buf[first:end].decode("utf-8", "replace")
                if text.endswith("\r"):
                    text = text[:-1]
                if text[:5] == "data:" and raw.startswith(b"\n", start) and not pending:
                    start += 1  # "data: ...\n\n", what nearly every event is: no parser needed
                    yield from self._events(text[6:] if text[5:6] == " " else text[5:])
                else:
                    data = parser.feed(text)
                    if parser.size > limit:
                        raise EventTooLarge(limit)
                    if data is not None:
                        yield from self._events(data)
            end = raw.find(b"\n", start)
            if end < 0:
                break
            buf, first, joined = raw, start, end
        self._hold(raw[start:])

    def _hold(self, piece: bytes) -> None:
        if piece:
            self._held.append(piece)
            self._held_size += len(piece)
            if self._held_size > self._max:
                raise EventTooLarge(self._max)

    def end(self) -> Iterator[dict[str, Any]]:
        """The events the body's end completes (a last event without its blank line)."""
        tail = b"".join(self._held).decode("utf-8", "replace").removesuffix("\r")
        self._held, self._held_size = [], 0
        for data in (self._parser.feed(tail) if tail else None, self._parser.flush()):
            if data is not None:
                yield from self._events(data)
        if self._adapter is not None and self._adapter.finish_reason and not self._done:
            self._done = True
            yield {"type": "RUN_FINISHED"}  # some servers end without [DONE]

    def _events(self, data: str) -> Iterator[dict[str, Any]]:
        if self._adapter is None:
            event = _json_or_none(data)
            if isinstance(event, dict) and event.get("type") not in (CALLS_RAN, USAGE):  # only the pipe says that
                lost = start_arguments(event) if event.get("type") == "TOOL_CALL_START" else ""
                if event.get("type") != "CUSTOM":  # on_interrupt's rawEvent holds LangGraph's interrupt id
                    event.pop("rawEvent", None)  # a framework's own payload: read only as above, never kept
                yield event
                if lost:  # as the call's first arguments (a subagent's call: its own, by the call id)
                    yield {"type": "TOOL_CALL_ARGS", "toolCallId": event.get("toolCallId"), "delta": lost}
            return
        if self._done:
            return
        if data.strip() == "[DONE]":
            self._done = True
            yield {"type": "RUN_FINISHED"}
            return
        chunk = _json_or_none(data)
        if isinstance(chunk, dict):
            yield from self._adapter.events(chunk)


# --- begin agent_pipe/results.py ---
# === results ======================================================================================


def unwrapped(text: str) -> str:
    """A result as the text it holds: a JSON-encoded string (Strands, Agno) decoded, ADK's
    ``{"result": ...}`` opened (twice at most: ``"{\\"result\\": ...}"``)."""
    for _ in range(2):
        if text[:1] not in ('"', "{"):
            break
        value = _json_or_none(text)
        if isinstance(value, str):
            text = value
        elif isinstance(value, dict) and list(value) == ["result"]:
            inner = value["result"]
            text = inner if isinstance(inner, str) else json.dumps(inner, ensure_ascii=False)
        else:
            break
    return text


def result_text(content: Any) -> str:
    """A tool result's text: a string, or (AG-UI 1.0) the text parts of a list, one per line."""
    if isinstance(content, list):
        return "\n".join(_str(p.get("text")) for p in content if isinstance(p, Mapping) and p.get("type") == "text")
    return unwrapped(_str(content) if not isinstance(content, (dict, int, float, bool)) else json.dumps(content))


def _image_of(part: Any) -> dict[str, str] | None:
    """An AG-UI 1.0 image part as the Outbound reads an image: inline data, or a URL."""
    if not isinstance(part, Mapping) or part.get("type") != "image" or not isinstance(part.get("source"), Mapping):
        return None
    source = part["source"]
    if source.get("type") == "data":
        return {"mimeType": _str(source.get("mimeType")), "data": _str(source.get("value"))}
    if source.get("type") == "url":
        return {"url": _str(source.get("value"))}
    return None


# --- begin agent_pipe/recorder.py ---
# === the recorder: events in, ordered segments and stable output out ==============================


class RecorderStateError(RuntimeError):
    """The recorder's own bookkeeping disagrees with its segments: a bug in the pipe, never the
    agent's doing. The turn ends with an error alert and the log has the traceback."""


class Recorder:
    """Records one agent run as ordered segments from AG-UI events (pure: no I/O).

    ``feed`` takes AG-UI events as dicts (camelCase, as on the wire). ``drain`` returns the output
    that became stable since the last call; all drains joined equal ``render()`` once finished.
    ``statuses`` collects status updates for Open WebUI's event emitter.

    Why it holds some output back: content handed to Open WebUI can never be taken back, and a
    tool block's result arrives after the call started. So a segment streams only once it can no
    longer change. Text streams delta by delta. A tool step streams when every call in it has its
    result, or when the run ends (then a call without a result shows done="false"); until then
    everything after it, text included, is held, so text that follows a call always lands below
    the call's block. Reasoning streams when the next non-reasoning segment starts, because its
    header carries the duration. Status events ("Running get_weather…", "Thinking…") cover the
    wait. A MESSAGES_SNAPSHOT never reorders what streamed; it is used only when nothing else
    streamed.

    Segment rules (reference/agui-snapshot-order.md §3.1): whitespace alone never opens a text
    segment; a call closes the open text; calls in a row are one step (parallel calls); a result
    ends the step for new calls but fills its own call wherever it is; reasoning in a row is one
    block; text or reasoning between calls splits the step.

    What the agent sent passes the ``scrubber`` (keys masked, markup defused; text may wait a delta
    for that) and a tool step is signed by the ``signer`` when it goes out. A run that ends in an
    error closes its calls that have no result as failed, so none keeps spinning in the chat.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        new_id: Callable[[str], str] = lambda kind: f"{kind}-{random_hex()}",
        input_ids: Iterable[str] = (),
        scrubber: Scrubber | None = None,
        signer: Signer | None = None,
        error_note: str = "",
        outbound: "Outbound | None" = None,
    ) -> None:
        """``error_note`` ends every error alert (the pipe: the turn's trace id); ``outbound``
        holds what shows beside the answer, with the pipe's limits (else the valves' defaults)."""
        self.scrubber = scrubber or Scrubber()
        self.signer = signer
        self._tail = ""  # text of the open segment that waits for the next delta (see Scrubber)
        self.segments: list[Segment] = []
        self.statuses: list[dict[str, Any]] = []
        self.finished = False
        self.error: str | None = None
        self._clock = clock
        self._new_id = new_id
        self._input_ids = set(input_ids)
        self._used_ids: set[str] = set()
        self._text_ids: set[str] = set()  # message ids that carried text: never reused for a tool step
        self._roles: dict[str, str] = {}
        self._text_open = False
        self._text_message: str | None = None
        self._message_id: str | None = None  # the text message streaming now, and its deltas so far
        self._message_parts: list[str] = []
        self._replays: set[str] = set()  # messages that repeat the one before them whole: not shown
        self._subagents: dict[str, Recorder] = {}  # subagentRunId -> its recorder, while it runs
        self._subagent_blocks: dict[int, Recorder] = {}  # id() of a Subagent segment -> its recorder
        self._call_owner: dict[str, Recorder] = {}  # a subagent's call id -> its recorder
        self.subagent_run = ""  # the subagentRunId of the subagent this recorder records ("": the agent)
        self._pending_ws = ""
        self._open_step: ToolStep | None = None
        self._calls: dict[str, tuple[ToolStep, ToolCall]] = {}
        self._last_chunk_call: str | None = None
        self._reasoning: Reasoning | None = None
        self._reasoning_start = 0.0
        self._emitted = 0  # segments fully emitted
        self._emitted_ids: set[int] = set()  # id() of the segments fully emitted
        self._emitted_chars = 0  # characters of segments[_emitted] emitted so far (text only)
        self._streamed_any = False
        self.error_note = error_note
        self.outbound = outbound or Outbound(self.scrubber)  # usage, sources and steps: beside the answer
        self.paused = False  # the run paused for the user (an interrupt): see Questions
        self.agent_messages = AgentMessages()  # the agent's own ids, kept with the answer for the next turn

    # -- events ---------------------------------------------------------------------------------

    def feed(self, event: Mapping[str, Any]) -> None:
        if self.finished or not isinstance(event, Mapping):
            return
        kind = event.get("type")
        if (self._call_owner or event.get("subagentRunId", self.subagent_run) != self.subagent_run) and (
            kind in _SUBAGENT_CONTENT
        ):
            if (child := self._subagent_of(event)) is not None:  # a subagent's own work: its block
                child.feed(event)
                self.statuses.extend(child.statuses)
                child.statuses = []
                return
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is not None:
            handler(self, event)

    # -- subagents (AG-UI 1.0) ------------------------------------------------------------------------

    def _subagent_of(self, event: Mapping[str, Any]) -> "Recorder | None":
        """The recorder of the subagent an event belongs to: by its subagentRunId, or for a call's
        later events by the call; one that starts without SUBAGENT_STARTED gets a block all the same."""
        kind, run_id = event.get("type"), _str(event.get("subagentRunId"))
        if kind not in _SUBAGENT_CONTENT or run_id == self.subagent_run:
            return None if run_id else self._call_owner.get(_str(event.get("toolCallId")))
        if not run_id:
            return self._call_owner.get(_str(event.get("toolCallId")))
        child = self._subagents.get(run_id)
        if child is None:
            child = self._start_subagent(run_id, "subagent")
        if event.get("toolCallId"):
            self._call_owner[_str(event.get("toolCallId"))] = child
        return child

    def _start_subagent(self, run_id: str, name: str) -> "Recorder":
        self._close_reasoning()
        self._close_text()
        self._open_step = None
        self._streamed_any = True
        child = Recorder(
            clock=self._clock,
            new_id=self._new_id,
            input_ids=self._input_ids,
            scrubber=self.scrubber,
            outbound=self.outbound,
        )
        child.subagent_run = run_id
        self._subagents[run_id] = child
        segment = Subagent(id=self._unique(run_id, "subagent"), name=name, segments=child.segments)
        self._subagent_blocks[id(segment)] = child
        self.segments.append(segment)
        return child

    def end_subagent(self) -> None:
        """A subagent's segment of the run ended: a call it left open did not run."""
        for _, call in self._calls.values():
            if call.result is None and not call.unreported:
                call.result = "Not run: the subagent ended before this tool returned a result."
        self.finish()

    # -- the recording rules ---------------------------------------------------------------------

    def text(self, delta: str, message_id: str | None = None) -> None:
        """Text continues the open text segment; whitespace alone never opens one."""
        if not delta or (message_id and self._roles.get(message_id, "assistant") != "assistant"):
            return
        if message_id and message_id != self._message_id:
            previous, self._message_id = "".join(self._message_parts), message_id
            self._message_parts = self.agent_messages.parts(message_id)  # its text, kept for its id
            if self._text_open and previous.strip() and delta == previous:
                self._replays.add(message_id)  # a new message that repeats the last one whole (Agno's pause)
        if message_id in self._replays:
            return
        if message_id:
            self._message_parts.append(delta)
        self._streamed_any = True
        if message_id:
            self._text_ids.add(message_id)
        self._close_reasoning()
        if self._text_open:
            segment = self._open_text()
            if (
                message_id
                and self._text_message
                and message_id != self._text_message
                and not (segment.text + self._tail)[-1:].isspace()
            ):
                delta = "\n\n" + delta  # another message continues the paragraph flow
            self._add_text(segment, delta)
            self._text_message = message_id or self._text_message
            return
        if not delta.strip():
            self._pending_ws += delta
            return
        self._open_step = None
        segment = Text("")
        self.segments.append(segment)
        self._add_text(segment, self._pending_ws + delta)
        self._pending_ws = ""
        self._text_open = True
        self._text_message = message_id

    def _add_text(self, segment: Text, delta: str) -> None:
        """Append what can go out now, scrubbed; keep a tail that may be a key's or markup's start."""
        pending = self._tail + delta
        cut = self.scrubber.stable_length(pending)
        segment.text += self.scrubber.text(pending[:cut])
        self._tail = pending[cut:]

    def tool_call(self, call_id: str, name: str, parent_id: str | None = None) -> None:
        """A call joins the open step (parallel calls) or opens a new one; text is closed."""
        if not call_id:
            return
        self._streamed_any = True
        known = self._calls.get(call_id)
        if known is not None:  # a repeated start: may only complete a name not yet streamed
            if name and not known[1].name and not self._is_emitted(known[0]):
                known[1].name = name
            return
        self._close_reasoning()
        self._close_text()
        step = self._open_step
        if step is None:
            usable = parent_id and parent_id not in self._text_ids
            step = ToolStep(message_id=self._unique(parent_id if usable else None, "msg"))
            self.segments.append(step)
            self._open_step = step
        call = ToolCall(id=call_id, name=name)
        step.calls.append(call)
        self._calls[call_id] = (step, call)
        self._used_ids.add(call_id)
        self.statuses.append({"description": f"Running {name or 'a tool'}…", "done": False})

    def tool_args(self, call_id: str, delta: str) -> None:
        entry = self._calls.get(call_id)
        if entry is None or not delta or self._is_emitted(entry[0]):
            return
        call = entry[1]
        if call.arguments and delta == call.arguments and _is_json(call.arguments):
            return  # a replay of the whole argument string (agent-framework #4194)
        call.arguments += delta

    def tool_result(self, call_id: str, content: str, message_id: str | None = None) -> None:
        """A result fills its call wherever that call is, and ends the step for new calls."""
        self._streamed_any = True
        if call_id not in self._calls:
            call_id = call_id or self._new_id("call")
            self.tool_call(call_id, "unknown_tool")  # a result whose call never streamed
        step, call = self._calls[call_id]
        if call.result is not None or self._is_emitted(step):
            return
        call.result = self.outbound.approvals.pop(call_id, "") + content
        call.result_id = self._unique(message_id, "result")
        self._open_step = None

    def calls_ran(self) -> None:
        """The calls still waiting for a result ran on the agent's side and none will come (an
        OpenAI stream that goes on after its calls): they are done, so what follows streams."""
        for step, call in self._calls.values():
            if call.result is None and not self._is_emitted(step):
                call.unreported = True
        self._open_step = None

    def reasoning(self, delta: str, reasoning_id: str | None = None) -> None:
        """Reasoning in a row is one block (rc8 gives every delta its own id)."""
        if not delta:
            return
        self._streamed_any = True
        if self._reasoning is not None:
            self._reasoning.text += delta
            self._reasoning.duration = int(self._clock() - self._reasoning_start)
            return
        if not delta.strip():
            return
        self._close_text()
        self._open_step = None
        self._reasoning = Reasoning(id=self._unique(reasoning_id, "reasoning"), text=delta)
        self._reasoning_start = self._clock()
        self.segments.append(self._reasoning)
        self.statuses.append({"description": "Thinking…", "done": False})

    def cancelled(self) -> None:
        """AG-UI 1.0's outcome ``cancelled``: the run was stopped, not failed. What streamed stays,
        a call it left open is closed as not run, and the answer says so when it has nothing else."""
        for step, call in self._calls.values():
            if call.result is None and not call.unreported and not self._is_emitted(step):
                call.result = "Not run: the agent's run was cancelled."
        if not any(isinstance(s, (Text, ToolStep)) for s in self.segments):
            self.text("*The agent cancelled the run.*")
        self.finish()
        self.statuses.append({"description": "The agent cancelled the run", "done": True})

    def finish(self, error: str | None = None) -> None:
        """End the run: everything pending is final; an error goes last."""
        if self.finished:
            return
        self._close_reasoning()
        self._close_text()
        self._open_step = None
        for child in list(self._subagents.values()):  # the run ended with its subagents
            child.finish(error=error) if error else child.end_subagent()
        self._subagents = {}
        if error:
            error = self.scrubber.error(error)
            self.error = error
            for segment in self.segments:
                if isinstance(segment, ToolStep) and not self._is_emitted(segment):
                    for call in segment.calls:
                        if call.result is None and not call.unreported:
                            call.result = "Error: the run ended before this tool returned a result."
                            call.failed = True
            self.segments.append(Error(error + self.error_note))
        self.finished = True
        last: dict[str, Any] = {"description": "The agent stopped with an error" if error else "Done", "done": True}
        last["hidden"] = not error
        if self.subagent_run == "" and (entries := self.agent_messages.entries(self.scrubber.redact)):
            last[AGENT_MESSAGES_KEY] = entries  # stored with the answer: its ids go back next turn
        self.statuses.append(last)

    # -- output ---------------------------------------------------------------------------------

    def drain(self) -> str:
        """Output that can no longer change and was not returned before."""
        out: list[str] = []
        while self._emitted < len(self.segments):
            index = self._emitted
            segment = self.segments[index]
            if isinstance(segment, Text):
                out.append(segment.text[self._emitted_chars :])
                self._emitted_chars = len(segment.text)
                if index == len(self.segments) - 1 and self._text_open:
                    break
            elif not self._is_stable(segment):
                break
            else:
                self._seal(segment)
                out.append(render_piece(self.segments[index - 1] if index else None, segment))
            self._emitted_ids.add(id(segment))
            self._emitted += 1
            self._emitted_chars = 0
        return "".join(out)

    def render(self) -> str:
        if self.finished:
            for segment in self.segments[self._emitted :]:
                self._seal(segment)
        return render_segments(self.segments)

    def take_statuses(self) -> list[dict[str, Any]]:
        statuses, self.statuses = self.statuses, []
        for status in statuses:  # masked first: a cut must not leave half a key behind
            text = self.scrubber.redact(status["description"])
            status["description"] = text if len(text) <= MAX_STATUS_CHARS else text[: MAX_STATUS_CHARS - 1] + "…"
        return statuses

    # -- helpers ----------------------------------------------------------------------------------

    def _is_stable(self, segment: Segment) -> bool:
        if self.finished and not self.paused:
            return True
        if isinstance(segment, Subagent):
            child = self._subagent_blocks.get(id(segment))
            return child is None or child.finished
        if isinstance(segment, ToolStep):
            # arguments that are not JSON lost a piece on the way: the step waits for the run's
            # snapshot, which has them whole, or its end. None at all is a call without arguments
            # (ag-ui-adk sends no TOOL_CALL_ARGS for one, and sends no snapshot): it waits for
            # nothing more (ag-ui-langgraph's own lost first chunk comes from its start's rawEvent,
            # wire.start_arguments)
            return all(
                (call.result is not None or call.unreported) and (not call.arguments or _is_json(call.arguments))
                for call in segment.calls
            )
        if isinstance(segment, Reasoning):
            return segment is not self._reasoning
        return True

    def _is_emitted(self, segment: Segment) -> bool:
        return id(segment) in self._emitted_ids

    def _seal(self, segment: Segment) -> None:
        """Final values of a segment that goes out now: keys masked, tool blocks signed."""
        redact = self.scrubber.redact
        if isinstance(segment, Subagent):
            if (child := self._subagent_blocks.get(id(segment))) is not None:
                child.render()  # its segments sealed (keys masked; not signed: never the agent's history)
            segment.id, segment.name = redact(segment.id), redact(segment.name)
            return
        if isinstance(segment, ToolStep):
            segment.message_id = redact(segment.message_id)
            for call in segment.calls:
                call.id, call.name, call.arguments = redact(call.id), redact(call.name), redact(call.arguments)
                if call.result is not None:
                    call.result = redact(call.result)
                if call.result_id:
                    call.result_id = redact(call.result_id)
                if self.signer is not None:
                    self.signer.seal(call, segment.message_id)
        elif isinstance(segment, Reasoning):
            segment.id, segment.text = redact(segment.id), redact(segment.text)

    def _open_text(self) -> Text:
        """The open text segment: while text is open, the last segment is text (an explicit
        check, not an ``assert``, which ``python -O`` strips)."""
        segment = self.segments[-1] if self.segments else None
        if not isinstance(segment, Text):
            raise RecorderStateError(f"text is open but the last segment is {type(segment).__name__}")
        return segment

    def _close_text(self) -> None:
        if self._tail and self._text_open:
            segment = self._open_text()
            segment.text += self.scrubber.text(self._tail)
        self._tail = ""
        self._text_open = False
        self._text_message = None
        self._pending_ws = ""

    def _close_reasoning(self) -> None:
        self._reasoning = None

    def _unique(self, preferred: str | None, kind: str) -> str:
        taken = self._used_ids | self._input_ids
        value = preferred if preferred and preferred not in taken else self._new_id(kind)
        while value in taken:
            value = self._new_id(kind)
        self._used_ids.add(value)
        return value


# --- begin agent_pipe/dispatch.py ---
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


# --- begin agent_pipe/usage.py ---
# === token usage ==================================================================================

_USAGE_NAMES = {  # AG-UI 1.0's TokenUsage is camelCase on the wire (0.1.x servers wrote snake_case)
    "input": ("inputTokens", "input_tokens", "prompt_tokens", "input_token_count"),
    "output": ("outputTokens", "output_tokens", "completion_tokens", "output_token_count"),
    "total": ("totalTokens", "total_tokens", "total_token_count"),
    "reasoning": ("reasoningTokens", "reasoning_tokens", "reasoning_output_token_count"),
    "cached": ("cachedInputTokens", "cached_input_tokens", "cache_read_input_token_count"),
}
_USAGE_DETAILS = {
    "reasoning": (("completion_tokens_details", "reasoning_tokens"), ("output_tokens_details", "reasoning_tokens")),
    "cached": (("prompt_tokens_details", "cached_tokens"), ("input_tokens_details", "cached_tokens")),
}


def _count(value: Any) -> int | None:
    """A token count, or None (not an int, negative, or past MAX_USAGE_COUNT)."""
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_USAGE_COUNT
    return value if ok else None


def usage_counts(report: Any) -> dict[str, int]:
    """One usage report (OpenAI, AG-UI TokenUsage or Agent Framework names) as counts by kind."""
    if not isinstance(report, Mapping):
        return {}
    counts: dict[str, int] = {}
    for kind, names in _USAGE_NAMES.items():
        found = next((n for n in map(_count, map(report.get, names)) if n is not None), None)
        for outer, inner in _USAGE_DETAILS.get(kind, ()):
            if found is None and isinstance(report.get(outer), Mapping):
                found = _count(report[outer].get(inner))
        if found is not None:
            counts[kind] = found
    if counts and "total" not in counts and ("input" in counts or "output" in counts):
        counts["total"] = counts.get("input", 0) + counts.get("output", 0)
    return counts


def _add_counts(reports: Iterable[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for counts in reports:
        for kind, value in counts.items():
            total[kind] = min(MAX_USAGE_COUNT, total.get(kind, 0) + value)
    return total


def openwebui_usage(counts: Mapping[str, int]) -> dict[str, Any]:
    """Counts in the shape Open WebUI's own OpenAI connections store (utils/response.py normalize_usage)."""
    usage: dict[str, Any] = {
        "prompt_tokens": counts.get("input", 0),
        "completion_tokens": counts.get("output", 0),
        "total_tokens": counts.get("total", 0),
        "input_tokens": counts.get("input", 0),
        "output_tokens": counts.get("output", 0),
    }
    if "reasoning" in counts:
        usage["completion_tokens_details"] = {"reasoning_tokens": counts["reasoning"]}
    if "cached" in counts:
        usage["prompt_tokens_details"] = {"cached_tokens": counts["cached"]}
    return usage


# --- begin agent_pipe/outbound.py ---
# --- beside the answer: token usage, sources, steps --------------------------------------------
# Open WebUI shows more of a turn than its content (utils/middleware.py, socket/main.py):
#   - usage: the ``usage`` of a chunk a pipe yields is shown on the message and stored in its
#     usage records (analytics, audit). Open WebUI adds up every usage chunk of a response, so the
#     pipe yields one ``{"usage": ...}`` per turn, after the answer (also after an error).
#   - sources: each ``source`` event is appended to the message's ``sources`` (the chips under the
#     answer); the pipe sends each source once, when the turn ends.
#   - images the agent made: stored in Open WebUI's file store, owned by the chat's user and
#     linked to the chat (its own upload_image), and attached by a ``files`` event: the message
#     holds the file's URL, never its bytes. One over the MAX_IMAGE_MB valve gets a line instead.
#   - steps: a status line update per step, sent only when nothing else showed up within
#     STEP_DELAY_SECONDS (StatusLine.send): a fast agent's steps cost no socket message.
# What the agent sends for them (docs/agent-pipe.md, "What the agent shows besides its answer"):
#   AG-UI: RUN_FINISHED/RUN_ERROR ``usage``; CUSTOM "usage" (Agent Framework 1.7.0: the run's
#   usage so far, each report replacing the one before); a turn whose run was resumed after the
#   user answered adds up its runs' usage;
#   CUSTOM "aihub.source" {url, title, snippet} (or a list of them); CUSTOM "aihub.image"
#   {mimeType, data (base64)} or {url: a data: URI} (or a list); CUSTOM "annotations"
#   (Agent Framework's citations); STEP_STARTED; CUSTOM "status" (Agent Framework's workflow state).
#   OpenAI: the final usage chunk (asked for with stream_options.include_usage) and
#   ``delta.annotations`` of type ``url_citation``; ``delta.images`` (``image_url`` parts).

_DATA_URI = re.compile(r"data:(image/[\w.+-]+);base64,(.*)", re.S)


_SUPERSTEP = re.compile(r"superstep:\d+")  # Agent Framework's workflow rounds: its executors are the steps


def _plain(text: Any, limit: int) -> str:
    """A title or snippet as plain text: one line of whitespace, no markup, cut to ``limit``."""
    text = " ".join(_str(text).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def safe_url(url: Any) -> str:
    """An http(s) URL with every character outside URL syntax percent-encoded; anything else ""."""
    url = _str(url).strip()
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return ""
    return quote(url, safe="/:?#[]@!$&'()*+,;=%~-._")[:2000].replace("'", "%27")


class Outbound:
    """Usage, sources and steps of one turn, from the agent's events (pure: no I/O).

    Usage: a run's own total (RUN_FINISHED or RUN_ERROR ``usage``, an OpenAI usage chunk) wins;
    without one the last CUSTOM "usage" report counts: Agent Framework 1.7.0's function loop sends
    the run's usage so far after every model call (its 1.0.0rc8 sent each call's own, so there the
    last call's usage is what counts). ``take_usage`` hands it out once. Sources are masked, escaped
    and sent once each (by URL, else by title).
    """

    def __init__(
        self,
        scrubber: Scrubber,
        *,
        max_image_bytes: int = 10 * MB,
        max_images: int | None = None,
        max_turn_image_bytes: int | None = None,
    ) -> None:
        """The limits are the MAX_IMAGE_MB, MAX_IMAGES and MAX_TURN_IMAGES_MB valves (the pipe
        passes them; None: the module's defaults, read when the Outbound is made)."""
        self._scrubber = scrubber
        self._report: dict[str, int] = {}
        self._total: dict[str, int] | None = None
        self._runs: list[dict[str, int]] = []  # the usage of the turn's finished runs (a resume is a new run)
        self._usage_taken = False
        self._source_keys: set[tuple[str, str]] = set()
        self.events: list[dict[str, Any]] = []  # Open WebUI events for the emitter, in order
        self.max_image_bytes = max_image_bytes  # the MAX_IMAGE_MB valve
        self.max_images = MAX_IMAGES if max_images is None else max_images  # images and image links per answer
        self.max_turn_image_bytes = MAX_TURN_IMAGES_MB * MB if max_turn_image_bytes is None else max_turn_image_bytes
        self._image_bytes = 0  # of the images kept so far
        self._images_left_out = False  # the answer says so once
        self.images: list[tuple[str, bytes]] = []  # (content type, bytes) to store when the turn ends
        self.image_links: list[str] = []  # http(s) images, attached as links (as Open WebUI does)
        self.asks = False  # set by the pipe when it can ask the user and resume the run (AG-UI)
        self.interrupts: list[dict[str, Any]] = []  # the questions of a paused run
        self.approvals: dict[str, str] = {}  # call id -> the note its result starts with (approved)
        self.legacy_interrupts: list[dict[str, Any]] = []  # CUSTOM on_interrupt (LangGraph, CrewAI), as interrupts
        self.client_calls: list[str] = []  # calls a finished run left for the client (the user) to answer
        self.asked_calls: set[str] = set()  # calls the user was asked about: never asked twice
        self.answered: dict[str, str] = {}  # accepted client calls -> what they show if no run streams a result
        self.framework = ""  # "agno" when its RAW events say so: how a call left to the client is answered
        self._activities: dict[str, Any] = {}  # ACTIVITY_* content by message id

    # -- usage ------------------------------------------------------------------------------------

    def usage_report(self, report: Any) -> None:
        if counts := usage_counts(report):
            self._report = counts

    def usage_total(self, usage: Any) -> None:
        reports = usage if isinstance(usage, list) else [usage]
        if counts := _add_counts(usage_counts(r) for r in reports):
            self._total = counts

    def run_ended(self) -> None:
        """A run finished: its usage is kept. Each run reports its own (a run resumed after the user
        answered reports only what it cost), so a turn's usage is the sum of its runs'."""
        if counts := self._total if self._total is not None else self._report:
            self._runs.append(counts)
        self._total, self._report = None, {}

    def take_usage(self) -> dict[str, Any] | None:
        """The turn's usage for Open WebUI, the first time only (a second chunk would add up)."""
        current = self._total if self._total is not None else self._report
        counts = _add_counts([*self._runs, current])
        if self._usage_taken or not counts:
            return None
        self._usage_taken = True
        return openwebui_usage(counts)

    # -- sources ----------------------------------------------------------------------------------

    def source(self, url: Any, title: Any = "", snippet: Any = "") -> None:
        redact = self._scrubber.redact
        link = safe_url(redact(_str(url)))
        name = _plain(redact(_str(title)), 200) or link
        text = _plain(redact(_str(snippet)), 2000)
        key = (link, "") if link else ("", name)
        if not name or key in self._source_keys or len(self._source_keys) >= MAX_SOURCES:
            return
        self._source_keys.add(key)
        source: dict[str, Any] = {"name": name, **({"url": link} if link else {})}
        self.events.append(
            {
                "type": "source",
                "data": {
                    "source": source,
                    "document": [text or name],
                    "metadata": [{"source": link or name, "name": name}],
                },
            }
        )

    def sources(self, value: Any) -> None:
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, Mapping):
                nested = item.get("url_citation")
                citation = nested if isinstance(nested, Mapping) else item
                self.source(citation.get("url"), citation.get("title"), citation.get("snippet"))

    # -- images -----------------------------------------------------------------------------------

    def image(self, recorder: Recorder, value: Any) -> None:
        """An image the agent made: decoded now (the size limit is a line where it arrived)."""
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, Mapping):
                continue
            nested = item.get("image_url")
            url = _str(nested.get("url") if isinstance(nested, Mapping) else item.get("url"))
            mime, data = _str(item.get("mimeType")), _str(item.get("data"))
            if match := _DATA_URI.match(url):
                mime, data = match.group(1), match.group(2)
            elif link := safe_url(self._scrubber.redact(url)):
                if self._room(recorder, 0):
                    self.image_links.append(link)
                continue
            if not mime.startswith("image/") or not data:
                continue
            size = len(data) * 3 // 4  # the base64's size, before decoding it (+ up to 2 of padding)
            if size > self.max_image_bytes + 3:
                recorder.text(image_over_limit(size, self.max_image_bytes))
                continue
            if not self._room(recorder, min(size, self.max_image_bytes)):
                continue  # past the answer's limits: not decoded, not held
            try:
                raw = base64.b64decode(data, validate=False)
            except ValueError:
                continue
            if len(raw) > self.max_image_bytes:
                recorder.text(image_over_limit(len(raw), self.max_image_bytes))
            elif raw:
                self.images.append((mime, raw))
                self._image_bytes += len(raw)

    def _room(self, recorder: Recorder, size: int) -> bool:
        """Whether one more image (of ``size`` bytes; 0 for a link) fits the answer's limits; the
        first that does not gets one line in the answer, where it arrived."""
        count = len(self.images) + len(self.image_links)
        if count < self.max_images and self._image_bytes + size <= self.max_turn_image_bytes:
            return True
        if not self._images_left_out:
            self._images_left_out = True
            recorder.text(
                f"\n\n*The agent made more images than one answer shows (at most {self.max_images} images per "
                f"answer, {self.max_turn_image_bytes / MB:g} MB in all), so the rest are not shown.*\n\n"
            )
        return False

    def take_events(self) -> list[dict[str, Any]]:
        events, self.events = self.events, []
        return events

    # -- questions (AG-UI interrupts) -----------------------------------------------------------------

    def pause(self, recorder: Recorder, outcome: Any) -> bool:
        """A run that ended with an interrupt (RUN_FINISHED.outcome, else the CUSTOM on_interrupt
        events of ag-ui-langgraph and ag-ui-crewai) pauses (nothing pending streams) until it is
        resumed; Agent Framework's synthetic ``confirm_changes`` call for the paused tool is dropped."""
        if not self.asks:
            return False
        interrupts: list[dict[str, Any]] = []
        if isinstance(outcome, Mapping) and outcome.get("type") == "interrupt":
            interrupts = [dict(i) for i in outcome.get("interrupts") or [] if isinstance(i, Mapping) and i.get("id")]
        if not interrupts:
            interrupts = self.legacy_interrupts
        self.legacy_interrupts = []
        if not interrupts:
            return False
        self.interrupts = interrupts
        paused_calls = {_str(i.get("toolCallId")) for i in interrupts}
        for segment in [s for s in recorder.segments if isinstance(s, ToolStep) and not recorder._is_emitted(s)]:
            segment.calls = [c for c in segment.calls if not _confirms(c, paused_calls)]
            if not segment.calls:
                recorder.segments.remove(segment)
        self._hold(recorder)
        return True

    def leave_to_client(self, recorder: Recorder, outcome: Any) -> bool:
        """A run that finished with calls it left for the client (ADK's long-running tools,
        LlamaIndex's frontend tools, Agno's confirmations, AG-UI 1.0's pendingToolCallIds) pauses,
        so the pipe can ask the user and go on with the answers as the calls' results."""
        if not self.asks:
            return False
        for call_id, content in self.answered.items():  # accepted, and this run streamed no result for it
            if (known := recorder._calls.get(call_id)) is not None and known[1].result is None:
                recorder.tool_result(call_id, content)
        self.answered = {}
        open_calls = [
            call.id
            for step, call in recorder._calls.values()
            if call.result is None
            and not call.unreported
            and not recorder._is_emitted(step)
            and call.id not in self.asked_calls
        ]
        named = outcome.get("pendingToolCallIds") if isinstance(outcome, Mapping) else None
        if isinstance(named, list):  # in the order the run made them
            open_calls = [c for c in map(_str, named) if c in open_calls] + [c for c in open_calls if c not in named]
        if not open_calls:
            return False
        self.client_calls = open_calls
        self._hold(recorder)
        return True

    def on_interrupt(self, value: Any, raw: Any, recorder: "Recorder | None" = None) -> None:
        """ag-ui-langgraph's and ag-ui-crewai's CUSTOM on_interrupt as an AG-UI interrupt: CrewAI
        sends the interrupt itself (answered by a 1.0 resume); LangGraph the value given to
        interrupt() as JSON text or a string, its id in rawEvent (answered by
        forwardedProps.command.resume), read as ag-ui-langgraph maps it (message, reason,
        toolCallId, responseSchema, expiresAt)."""
        if isinstance(value, str) and value[:1] in ("{", "["):
            parsed = _json_or_none(value)
            value = parsed if parsed is not None else value
        if isinstance(value, Mapping) and isinstance(value.get("id"), str) and isinstance(value.get("reason"), str):
            self.legacy_interrupts.append({**value, "convention": "resume"})
            return
        fields = value if isinstance(value, Mapping) else {}
        raw_id = raw.get("id") if isinstance(raw, Mapping) else None
        if isinstance(fields.get("action_requests"), list):  # LangChain's HumanInTheLoopMiddleware
            self._hitl(fields["action_requests"], _str(raw_id), recorder)
            return
        interrupt: dict[str, Any] = {
            "id": _str(raw_id) or f"on_interrupt-{len(self.legacy_interrupts)}",
            "reason": _str(fields.get("reason")) or "langgraph:interrupt",
            "message": value if isinstance(value, str) else _question_text(fields),
            "convention": "command",
        }
        for key, alias in (
            ("toolCallId", "tool_call_id"),
            ("responseSchema", "response_schema"),
            ("expiresAt", "expires_at"),
        ):
            if (found := fields.get(key, fields.get(alias))) is not None:
                interrupt[key] = found
        self.legacy_interrupts.append(interrupt)

    def _hitl(self, actions: list[Any], interrupt_id: str, recorder: "Recorder | None") -> None:
        """LangChain's HumanInTheLoopMiddleware: each action request is a tool approval; the answers
        go back together as forwardedProps.command.resume {"decisions": [...]}, in order."""
        for n, action in enumerate(a for a in actions if isinstance(a, Mapping)):
            name = _str(action.get("name"))
            open_calls = [
                c.id for _, c in (recorder._calls.values() if recorder else ()) if c.name == name and c.result is None
            ]
            self.legacy_interrupts.append(
                {
                    "id": interrupt_id or f"on_interrupt-{len(self.legacy_interrupts)}",
                    "reason": "tool_call",
                    "toolCallId": open_calls[-1] if open_calls else "",
                    "convention": "hitl",
                    "action": {
                        "name": name,
                        "arguments": json.dumps(action.get("args"), ensure_ascii=False)
                        if action.get("args") is not None
                        else "",
                    },
                    "index": n,
                }
            )

    @staticmethod
    def _hold(recorder: Recorder) -> None:
        recorder._close_text()
        recorder._open_step = None
        recorder.paused = recorder.finished = True  # the read loop ends; nothing pending is final

    # -- AG-UI events -------------------------------------------------------------------------------

    def custom(self, recorder: Recorder, name: str, value: Any, raw: Any = None) -> None:
        if name == "on_interrupt":
            self.on_interrupt(value, raw, recorder)
        elif name == "usage":
            self.usage_report(value)
        elif name == SOURCE_EVENT:
            self.sources(value)
        elif name == IMAGE_EVENT:
            self.image(recorder, value)
        elif name == "annotations" and isinstance(value, Mapping):  # Agent Framework's citations
            self.sources([a for a in value.get("annotations") or [] if isinstance(a, Mapping) and a.get("url")])
        elif name == "status" and isinstance(value, Mapping) and value.get("state"):
            state = _str(value["state"]).replace("_", " ")
            recorder.statuses.append({"description": f"Workflow {state}…", "done": False, "step": True})

    def step(self, recorder: Recorder, name: str) -> None:
        if name and not _SUPERSTEP.fullmatch(name):
            recorder.statuses.append({"description": f"{name.replace('_', ' ')}…", "done": False, "step": True})

    def activity(self, recorder: Recorder, event: Mapping[str, Any]) -> None:
        """AG-UI 1.0's ACTIVITY_SNAPSHOT and ACTIVITY_DELTA (a JSON Patch of the snapshot) in the
        status line, as steps are: the activity's own words (title, status, message...), else its type."""
        message_id, kind = _str(event.get("messageId")), _str(event.get("activityType"))
        if event.get("type") == "ACTIVITY_SNAPSHOT":
            content = event.get("content")
            if isinstance(content, dict):
                if event.get("replace") is False and isinstance(self._activities.get(message_id), dict):
                    content = {**self._activities[message_id], **content}
                self._activities[message_id] = content
        elif message_id in self._activities and isinstance(event.get("patch"), list):
            self._activities[message_id] = json_patched(self._activities[message_id], event["patch"])
        content = self._activities.get(message_id)
        words = _activity_words(content) if isinstance(content, Mapping) else ""
        if words := " ".join(words.split()) or kind.replace("_", " "):
            recorder.statuses.append({"description": f"{words.rstrip('.…')}…", "done": False, "step": True})


_WORDS = ("title", "status", "message", "text", "description", "label")


def _activity_words(content: Mapping[str, Any]) -> str:
    return next((content[key] for key in _WORDS if isinstance(content.get(key), str) and content[key].strip()), "")


def json_patched(document: Any, patch: list[Any]) -> Any:
    """An RFC 6902 patch's add, replace and remove applied to a copy (what an activity's status
    needs); an operation whose path does not resolve is skipped, as a status is only decoration."""
    document = json.loads(json.dumps(document))
    for op in patch:
        if not isinstance(op, Mapping) or not isinstance(op.get("path"), str):
            continue
        keys = [k.replace("~1", "/").replace("~0", "~") for k in op["path"].split("/")[1:]]
        if not keys:
            if op.get("op") in ("add", "replace"):
                document = op.get("value")
            continue
        parent = document
        try:
            for key in keys[:-1]:
                parent = parent[int(key)] if isinstance(parent, list) else parent[key]
            last = keys[-1]
            if isinstance(parent, dict):
                if op.get("op") in ("add", "replace"):
                    parent[last] = op.get("value")
                elif op.get("op") == "remove":
                    parent.pop(last, None)
            elif isinstance(parent, list):
                if op.get("op") == "add":
                    parent.insert(len(parent) if last == "-" else int(last), op.get("value"))
                elif op.get("op") == "replace":
                    parent[int(last)] = op.get("value")
                elif op.get("op") == "remove":
                    del parent[int(last)]
        except (KeyError, IndexError, ValueError, TypeError):
            continue
    return document


def _question_text(fields: Mapping[str, Any]) -> str:
    """The question in an interrupt's value (or Strands' metadata.reason): its message, question,
    prompt or text, else the whole value as JSON."""
    for key in ("message", "question", "prompt", "text", "description"):
        if isinstance(fields.get(key), str) and fields[key].strip():
            return fields[key]
    return json.dumps(fields, ensure_ascii=False) if fields else ""


def _confirms(call: ToolCall, paused: set[str]) -> bool:
    """Agent Framework's ``confirm_changes`` call that stands for a paused tool call."""
    if call.name != "confirm_changes":
        return False
    try:
        arguments = json.loads(call.arguments or "{}")
    except ValueError:
        return False
    return isinstance(arguments, dict) and _str(arguments.get("function_call_id")) in paused


def image_over_limit(size: int, limit: int) -> str:
    return (
        f"\n\n*The agent made an image of {size / 1048576:.1f} MB, over this chat's limit of "
        f"{limit / 1048576:g} MB, so it is not shown.*\n\n"
    )


async def store_images(
    images: list[tuple[str, bytes]], request: Any, user: Mapping[str, Any] | None, metadata: Mapping[str, Any]
) -> list[str]:
    """Store the images in Open WebUI's file store as the chat's user, linked to the chat's
    message, with Open WebUI's own ``upload_image`` (imported here: only inside Open WebUI).
    Returns their URLs; raises when this Open WebUI cannot store them."""
    from open_webui.models.users import Users  # noqa: PLC0415 (only inside Open WebUI)
    from open_webui.routers.images import upload_image  # noqa: PLC0415 (Open WebUI's own, there only)

    found = Users.get_user_by_id(_str((user or {}).get("id")))
    owner = await found if inspect.isawaitable(found) else found
    if owner is None or request is None:
        raise LookupError("no user or request to store the image for")
    urls = []
    for mime, raw in images:
        stored = upload_image(request, raw, mime, dict(metadata), owner)
        stored = await stored if inspect.isawaitable(stored) else stored
        # 0.12: (file, {"url": …}); older releases return the URL itself
        url = stored[1]["url"] if isinstance(stored, tuple) else stored
        urls.append(_str(url))
    return urls


async def outbound_end(
    outbound: Outbound, emitter: EventEmitter, streaming: bool, turn: Mapping[str, Any]
) -> AsyncIterator[dict[str, Any]]:
    """The turn's sources and images (emitted, stored on the message) and its usage (yielded,
    once). A response that does not stream gets no usage: Open WebUI would join it into its text."""
    for event in outbound.take_events():
        await _emit_event(emitter, event)
    urls = list(outbound.image_links)
    if outbound.images:
        try:
            urls += await store_images(outbound.images, turn.get("request"), turn.get("user"), turn["metadata"])
        except Exception as exc:  # e.g. an Open WebUI release without upload_image
            log.warning("aihub_agent_pipe: the agent's image could not be stored (%s)", type(exc).__name__)
            await _emit(emitter, {"description": "The agent made an image that could not be stored", "done": True})
        outbound.images = []
    if urls:
        await _emit_event(emitter, {"type": "files", "data": {"files": [{"type": "image", "url": u} for u in urls]}})
    usage = outbound.take_usage()
    if usage and streaming:
        yield {"usage": usage}


# --- begin agent_pipe/valves.py ---
# === valves =======================================================================================


class AgentSpec(BaseModel):
    """One entry of the AGENTS valve (written by ``provision sync``)."""

    model_config = ConfigDict(extra="ignore", frozen=True)  # parsed once, shared by every chat

    id: str
    name: str
    transport: Literal["agui", "openai"] = "agui"
    url: str
    model: str | None = None  # the model name for the openai transport (default: the agent id)
    api_key: str | None = None  # the key's name: in API_KEYS ("sync") or the server's environment ("server")
    key_from: Literal["sync", "server"] = "sync"
    features: tuple[str, ...] = ()
    # issue 19's keys (CONTRACT-19); absent in valves written before them
    reads: tuple[Literal["documents", "images"], ...] | None = None  # None: not declared, takes what comes
    identity: Literal["auto", "signed", "none"] = "auto"
    oauth_token_header: str | None = None


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Open WebUI's own secrets live in its environment too: a key_from "server" agent never gets them.
_OPENWEBUI_SECRETS = ("WEBUI_", "DATABASE_", "REDIS_", "WEBSOCKET_", "OAUTH_", "LDAP_", "OPENWEBUI_")


# Open WebUI builds the valves anew for every request, but their text changes rarely and chats are
# many: what is parsed or built from them is cached by that text (read-only from then on).


@functools.lru_cache(maxsize=8)
def _parse_agents(text: str) -> Mapping[str, AgentSpec]:
    """The AGENTS valve by agent id, entries that do not validate left out (never raises)."""
    try:
        raw = json.loads(text or "[]")
    except ValueError:
        log.warning("aihub_agent_pipe: the AGENTS valve is not valid JSON")
        return types.MappingProxyType({})
    agents: dict[str, AgentSpec] = {}
    for item in raw if isinstance(raw, list) else ():
        try:
            spec = AgentSpec.model_validate(item)
        except ValidationError:
            log.warning("aihub_agent_pipe: skipping an AGENTS entry that does not validate")
            continue
        agents.setdefault(spec.id, spec)
    return types.MappingProxyType(agents)


@functools.lru_cache(maxsize=8)
def _parse_keys(text: str) -> Mapping[str, str]:
    """The API_KEYS valve: key name -> secret (anything else left out)."""
    try:
        keys = json.loads(text or "{}")
    except ValueError:
        return types.MappingProxyType({})
    if not isinstance(keys, dict):
        return types.MappingProxyType({})
    return types.MappingProxyType({str(k): v for k, v in keys.items() if isinstance(v, str) and v})


@functools.lru_cache(maxsize=8)
def _server_key_names(agents_text: str) -> tuple[str, ...]:
    """The environment variables that key_from "server" agents read their keys from."""
    return tuple(
        dict.fromkeys(
            agent.api_key
            for agent in _parse_agents(agents_text).values()
            if agent.key_from == "server" and agent.api_key and _ENV_NAME.fullmatch(agent.api_key)
        )
    )


@functools.lru_cache(maxsize=8)
def _scrubber(synced: frozenset[str], signing_key: str, from_server: tuple[str, ...]) -> Scrubber:
    """Built once per set of keys (the server's keys are read on every chat, so a rotation counts)."""
    return Scrubber(s for s in (*synced, signing_key, *from_server) if s)


# --- begin agent_pipe/transport.py ---
# === transport: the pool, the proxy, the status line, batching, the run ===========================


# --- connections: one pooled client per process (and event loop) ------------------------------
# A new client per chat turn costs a connection (and a TLS handshake) every turn, and an SSL
# context (~20 ms of CPU) for each. The client is aiohttp's, as for Open WebUI's own OpenAI
# connections: per network read it costs Open WebUI about half the CPU httpx does, and at 50
# chats at a time Open WebUI's CPU is the chat's latency. The pool lives in a holder registered
# in sys.modules, so a reload of this file (Open WebUI re-executes it when the function changes)
# reuses the same connections instead of orphaning them. One client per event loop: a client's
# connections belong to the loop that opened them (tests run several loops; Open WebUI one).

_POOL_HOLDER = "aihub_agent_pipe__connection_pool"
_POOL_VERSION = 2  # bump when the client's configuration changes: a reload then builds a new one


@functools.lru_cache(maxsize=8)
def _deadline(timeout: float) -> aiohttp.ClientTimeout:
    """The run's deadline, enforced by aiohttp itself: one timer per request, not one per read."""
    return aiohttp.ClientTimeout(total=timeout, sock_connect=timeout)


def _pool() -> Any:
    """The process-wide holder: ``clients`` by event loop, the SSL context, a lock for building it."""
    holder: Any = sys.modules.get(_POOL_HOLDER)  # a module, with the attributes set here
    if holder is None:
        holder = types.ModuleType(_POOL_HOLDER, "aihub_agent_pipe's shared HTTP clients (survives reloads)")
        holder.clients = {}  # loop -> (version, aiohttp.ClientSession)
        holder.ssl_context = None
        holder.ssl_lock = threading.Lock()
        holder = sys.modules.setdefault(_POOL_HOLDER, holder)
    return holder


def _ssl_context() -> ssl.SSLContext:
    """Built once per process (blocking: it reads the CA store); call it off the event loop.

    The system's CA store (and SSL_CERT_FILE), as Open WebUI's own connections use.
    """
    pool = _pool()
    with pool.ssl_lock:
        if pool.ssl_context is None:
            pool.ssl_context = ssl.create_default_context()
        return pool.ssl_context


async def shared_client() -> aiohttp.ClientSession:
    """This event loop's client, created on first use; the SSL context is built in a thread."""
    loop = asyncio.get_running_loop()
    pool = _pool()
    entry = pool.clients.get(loop)
    if entry is not None and entry[0] == _POOL_VERSION and not entry[1].closed:
        return entry[1]
    ssl_context = pool.ssl_context or await asyncio.to_thread(_ssl_context)
    entry = pool.clients.get(loop)  # another chat may have created it while this one waited
    if entry is not None and entry[0] == _POOL_VERSION and not entry[1].closed:
        return entry[1]
    for other in [other for other in pool.clients if other.is_closed()]:
        del pool.clients[other]  # a closed loop's connections can never be used again
    # A client of an older version of this file is dropped, not closed: chats still streaming on
    # it keep it alive until they end.
    client = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(
            limit=MAX_CONNECTIONS, limit_per_host=0, keepalive_timeout=KEEPALIVE_SECONDS, ssl=ssl_context
        ),
        # shared by every user's chats: a cookie one agent response sets must never ride along
        # on another user's request
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=False,  # with it, aiohttp looks up proxies and .netrc in a thread on every request; see _proxy_for
        # every request passes its own (stream_run: the TIMEOUT_SECONDS valve); this is the fallback
        timeout=aiohttp.ClientTimeout(total=300, sock_connect=300),
    )
    pool.clients[loop] = (_POOL_VERSION, client)
    return client


# --- the proxy ------------------------------------------------------------------------------------


# The variables that can give a URL of each scheme a proxy, and those that can take it away again.
# REQUEST_METHOD: urllib ignores HTTP_PROXY when it is set (a CGI environment, where it is untrusted).
_PROXY_VARIABLES = {"http": ("http_proxy", "HTTP_PROXY"), "https": ("https_proxy", "HTTPS_PROXY")}
_NO_PROXY_VARIABLES = ("no_proxy", "NO_PROXY", "REQUEST_METHOD")


def _proxy_for(url: str) -> str | None:
    """The HTTP(S)_PROXY for ``url`` unless NO_PROXY exempts it: environment reads only, no thread.

    Read on every chat, so a change counts, but only what can matter: with no proxy for the URL's
    scheme (the usual case) that is two reads. A read of an unset variable raises and catches
    two KeyErrors inside ``os.environ``; seven of them cost the first token 0.045 ms
    (``bench/pipe_versions.py``). urllib's answer is cached by the values it depends on.
    """
    proxies = tuple(map(os.environ.get, _PROXY_VARIABLES.get(url.partition(":")[0].lower(), ())))
    if not any(proxies):
        return None
    return _proxy_lookup(url, proxies + tuple(map(os.environ.get, _NO_PROXY_VARIABLES)))


@functools.lru_cache(maxsize=64)
def _proxy_lookup(url: str, environment: tuple[str | None, ...]) -> str | None:
    parts = urllib.parse.urlsplit(url)
    # proxy_bypass_environment: CPython's no_proxy rule, which typeshed does not list
    if urllib.request.proxy_bypass_environment(parts.hostname or ""):  # type: ignore[attr-defined]
        return None
    return urllib.request.getproxies_environment().get(parts.scheme)


# --- the status line ------------------------------------------------------------------------------


class StatusLine:
    """The chat's status line (Open WebUI's event emitter), updates kept in order.

    In a browser chat every status is two socket messages and a rewrite of the whole chat in
    Open WebUI's database, and Open WebUI's own connections send none. So "Asking <agent>…" is
    sent only when the agent has shown nothing within ``ASKING_DELAY_SECONDS`` (a timer, not a
    wait: the request goes out at once); an agent that answers sooner is its own progress sign.
    """

    def __init__(self, emitter: EventEmitter) -> None:
        self._emitter = emitter
        self._timer: asyncio.TimerHandle | None = None
        self._sending: asyncio.Future[None] | None = None  # a delayed update on its way

    def later(self, update: dict[str, Any], delay: float) -> None:
        if self._emitter is not None:
            self._timer = asyncio.get_running_loop().call_later(delay, self._fire, update)

    def _fire(self, update: dict[str, Any]) -> None:
        self._timer = None
        self._sending = asyncio.ensure_future(_emit(self._emitter, update))

    def shown(self) -> None:
        """Something showed up in the chat (or it ended): a delayed update not sent yet is not needed."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def send(self, update: dict[str, Any]) -> None:
        if update.pop("step", False):
            # an agent's step shows only when nothing else did within the delay: a step that
            # text, a tool or the next step follows at once needs no status (see Outbound)
            self.shown()
            self.later(update, STEP_DELAY_SECONDS)
            return
        self.shown()
        if self._sending is not None:
            await self._sending  # the delayed update first, so this one is the last word
            self._sending = None
        await _emit(self._emitter, update)


async def _emit_event(emitter: EventEmitter, event: dict[str, Any]) -> None:
    if emitter is None:
        return
    try:
        await emitter(event)
    except Exception:  # what the agent shows beside its answer must never break the answer
        log.debug("aihub_agent_pipe: event emitter failed", exc_info=True)


async def _emit(emitter: EventEmitter, status: dict[str, Any]) -> None:
    if emitter is None:
        return
    try:
        await emitter({"type": "status", "data": status})
    except Exception:  # a status is decoration; never let it break the answer
        log.debug("aihub_agent_pipe: event emitter failed", exc_info=True)


# --- batching -------------------------------------------------------------------------------------


class Batch:
    """Text on its way to Open WebUI, sent as few chunks as a reader cannot tell from a stream.

    Open WebUI spends more CPU on each chunk a pipe yields (it wraps it in an OpenAI chunk of its
    own, and a browser chat emits it over the socket) than the pipe spends on an event, and at
    many chats at a time its CPU is every chat's latency. So text that arrives within ``interval``
    seconds of the last chunk sent waits and goes out with the first read after that (``due``);
    when the agent pauses and no read comes, ``stream_run`` wakes for it at ``wake_at``, one
    interval later (a wake of its own costs more than the chunk: it is kept for pauses). The first
    text goes out at once; nothing waits longer than twice the interval.
    """

    def __init__(self, interval: float) -> None:
        self.interval = max(0.0, interval)
        self._parts: list[str] = []
        self._sent_at = -float("inf")  # loop time of the last chunk out

    @property
    def due(self) -> float:
        """When the held text must go out (loop time); meaningful only while some is held."""
        return self._sent_at + self.interval

    @property
    def wake_at(self) -> float:
        """When held text goes out although no read came (the agent paused)."""
        return self._sent_at + 2 * self.interval

    @property
    def holding(self) -> bool:
        return bool(self._parts)

    def add(self, text: str) -> None:
        if text:
            self._parts.append(text)

    def ready(self, now: float) -> bool:
        return bool(self._parts) and now >= self.due

    def take(self, now: float | None = None) -> str:
        text = "".join(self._parts)
        self._parts = []
        if text and now is not None:
            self._sent_at = now
        return text


def _safe_chunks(chunk: str) -> list[str]:
    """Open WebUI passes a yielded line that starts with "data:" through as raw SSE; split it."""
    if not chunk:
        return []
    if chunk.startswith("data:"):
        return [chunk[:1], chunk[1:]]
    return [chunk]


# --- the run --------------------------------------------------------------------------------------


async def stream_run(
    client: aiohttp.ClientSession,
    agent: AgentSpec,
    headers: dict[str, str],
    payload: "dict[str, Any] | RequestBody",
    recorder: Recorder,
    batch: Batch,
    status: StatusLine,
    timeout: float,
    max_event: int = MAX_EVENT_MB * MB,
) -> AsyncIterator[str]:
    """Send the run to the agent, feed its events to the recorder, yield what became stable.

    One deadline for the whole run (``timeout`` seconds), kept by aiohttp. Reads are
    ``readany()``, which a timeout can interrupt and the next call resume, so while the batch
    holds text the reads also wake when that text must go out. Once the run has finished and
    everything is out, the end of the body (which follows at once) is still read, briefly: only a
    response read to its end returns its connection to the pool. What the batch still holds when
    this raises is the caller's to send.
    """
    url = agent.url.rstrip("/") + "/chat/completions" if agent.transport == "openai" else agent.url
    if isinstance(payload, RequestBody):  # encode_body's, with files: sent piece by piece, its size known
        body: dict[str, Any] = {"data": payload.stream(), "headers": {**headers, "Content-Length": str(payload.size)}}
    else:
        body = {"json": payload, "headers": headers}
    request = client.post(url, **body, timeout=_deadline(timeout), proxy=_proxy_for(url))
    async with request as response:
        if response.status >= 400:
            # read enough to mask a key the body echoes before the text is cut short (failure_text)
            detail = b""
            while len(detail) < 8192 and (more := await response.content.read(8192 - len(detail))):
                detail += more
            raise AgentHTTPError(response.status, detail.decode("utf-8", "replace"))
        stream, content, loop = AgentStream(agent.transport, max_event), response.content, asyncio.get_running_loop()
        try:
            while not recorder.finished:
                if batch.holding:
                    # Held text goes out with the first read after it is due, or at wake_at when the
                    # agent pauses: one timer for the whole wait, not one per read, and nothing is
                    # yielded or emitted inside it (a timeout must only ever interrupt the read).
                    waiting, ended = asyncio.timeout_at(batch.wake_at), False
                    try:
                        async with waiting:
                            while not (ended or recorder.finished or batch.ready(loop.time())):
                                raw = await content.readany()
                                ended = not raw
                                for event in stream.feed(raw) if raw else stream.end():
                                    recorder.feed(event)
                                batch.add(recorder.drain())
                    except TimeoutError:
                        if not waiting.expired():
                            raise  # the run's deadline (aiohttp's)
                    for update in recorder.take_statuses():
                        await status.send(update)
                    for chunk in _safe_chunks(batch.take(loop.time())):
                        yield chunk
                    if ended:
                        return
                    continue
                # Nothing held: the first text of this read goes out before the rest of it is parsed.
                raw = await content.readany()
                for event in stream.feed(raw) if raw else stream.end():
                    recorder.feed(event)
                    if recorder.statuses:
                        for update in recorder.take_statuses():
                            await status.send(update)
                    if text := recorder.drain():
                        batch.add(text)  # after the first, the rest of this read waits for the interval
                        if batch.ready(now := loop.time()):
                            for chunk in _safe_chunks(batch.take(now)):
                                yield chunk
                if not raw:
                    break
        finally:  # what the run said of its framework, for answering its client calls (questions.py)
            recorder.outbound.framework = stream.raw_source or recorder.outbound.framework
        for update in recorder.take_statuses():
            await status.send(update)
        for chunk in _safe_chunks(batch.take(loop.time())):
            yield chunk  # the end of a run is never held
        if recorder.finished:
            # The body's end follows the run's end at once: read it, briefly, so the connection
            # goes back to the pool; a server that keeps the body open loses its connection.
            waiting = asyncio.timeout_at(loop.time() + FINISH_GRACE_SECONDS)
            try:
                async with waiting:
                    while await content.readany():
                        pass
            except TimeoutError:
                if not waiting.expired():
                    raise


# --- begin agent_pipe/dialogs.py ---
# --- dialogs: what the user is asked, and how the answer goes back -------------------------------
# Open WebUI's dialog renders its message as Markdown (ConfirmDialog of 0.6.26 to 0.12.4:
# DOMPurify.sanitize(marked.parse(message)); 0.6.5's showed plain text): what the agent wrote
# must not become a link, a remote image (which would tell the image's host the user's address),
# emphasis or HTML there. The marked it calls carries Open WebUI's own extensions (once a chat has
# rendered): its KaTeX one reads \( … \) and \[ … \] as math and renders what is between them as
# raw HTML, so backslash escapes would open it. A numeric character reference is text to CommonMark
# in every context but code, and starts none of those extensions.
_MARKDOWN_PUNCTUATION = re.compile(r"[!-/:-@\[-`{-~]")
_BACKTICKS = re.compile(r"`+")


def markdown_text(text: str) -> str:
    """Text Markdown shows as written: every ASCII punctuation character as a numeric character
    reference (``(`` is ``&#40;``), so no link, image, emphasis, list, heading, tag or math forms."""
    return _MARKDOWN_PUNCTUATION.sub(lambda match: f"&#{ord(match.group())};", text)


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


def _is_approval(interrupt: Mapping[str, Any], recorder: Recorder) -> bool:
    """A tool approval: its call streamed, or it says so (reason tool_call, an ``approved`` answer)."""
    properties = _mapping(_mapping(interrupt.get("responseSchema")).get("properties"))
    return (
        _str(interrupt.get("toolCallId")) in recorder._calls
        or interrupt.get("reason") == "tool_call"
        or "approved" in properties
    )


def _interrupt_message(interrupt: Mapping[str, Any]) -> str:
    """What the agent asks: the interrupt's message, else Strands' question in metadata.reason.
    CrewAI's @human_feedback asks about its method's output (metadata.crewai.output, what its own
    console shows for review): it follows the question."""
    message = _str(interrupt.get("message"))
    reviewed = _mapping(_mapping(interrupt.get("metadata")).get("crewai")).get("output")
    if reviewed is not None and not isinstance(reviewed, str):
        reviewed = json.dumps(reviewed, ensure_ascii=False)
    if message.strip() and reviewed and reviewed.strip():
        return f"{message}\n\n{reviewed}"
    if message.strip():
        return message
    reason = _mapping(interrupt.get("metadata")).get("reason")
    if isinstance(reason, str):
        return reason
    return _question_text(reason) if isinstance(reason, Mapping) else ""


def _confirmation(name: str, arguments: str, message: str) -> dict[str, Any]:
    """Open WebUI's confirmation dialog for a tool: its name first, then the agent's words as plain
    text, then the arguments as a code block (nothing the agent sent becomes markup)."""
    text = f"The agent wants to run {markdown_code(name)}." if name else "The agent wants to run a tool."
    if message.strip():
        text += "\n\n" + markdown_text(message)
    if arguments:
        text += "\n\nArguments:\n\n" + markdown_block(arguments)
    return {"type": "confirmation", "data": {"title": f"Allow {name[:80] or 'a tool'}?", "message": text}}


def _input(title: str, message: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "input", "data": {"title": title, "message": message, "placeholder": answer_hint(schema)}}


def question_of(interrupt: Mapping[str, Any], recorder: Recorder) -> dict[str, Any]:
    """The dialog for an interrupt: a confirmation for a tool approval or a yes/no answer, else an
    input the user types (keys masked; nothing the agent sent becomes markup in the dialog)."""
    redact = recorder.scrubber.redact
    call = recorder._calls.get(_str(interrupt.get("toolCallId")))
    schema = _mapping(interrupt.get("responseSchema"))
    message = redact(_interrupt_message(interrupt))
    if isinstance(interrupt.get("action"), Mapping):  # a HumanInTheLoopMiddleware action: its own name and args
        action = interrupt["action"]
        return _confirmation(
            " ".join(redact(_str(action.get("name"))).split()), redact(_str(action.get("arguments"))), ""
        )
    if _is_approval(interrupt, recorder):
        name = " ".join(redact(call[1].name).split()) if call else ""
        return _confirmation(name, redact(call[1].arguments) if call else "", message)
    if schema.get("type") == "boolean":
        return {"type": "confirmation", "data": {"title": "The agent asks", "message": markdown_text(message)}}
    return _input("The agent asks", markdown_text(message or "The agent asks for your answer."), schema)


ADK_CONFIRMATION = "adk_request_confirmation"  # ADK's tool_context.request_confirmation(): a call left to the client


def _example_schema(example: Any) -> dict[str, Any]:
    """The schema of an answer shaped like ``example`` (ADK's confirmation payload is an example of
    the data it needs: ``{"address": ""}``), for the input's hint and its check."""
    if isinstance(example, bool):
        return {"type": "boolean"}
    if isinstance(example, int):
        return {"type": "integer"}
    if isinstance(example, float):
        return {"type": "number"}
    if isinstance(example, list):
        return {"type": "array"}
    if isinstance(example, Mapping):
        return {"type": "object", "properties": {str(k): _example_schema(v) for k, v in example.items()}}
    return {"type": "string"}


def _adk_confirmation(call: ToolCall) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """ADK's confirmation call: the call it confirms, and the ToolConfirmation it asks for."""
    arguments = _mapping(_json_or_none(call.arguments))
    return _mapping(arguments.get("originalFunctionCall")), _mapping(arguments.get("toolConfirmation"))


def client_question(call: ToolCall, recorder: Recorder) -> tuple[dict[str, Any], Mapping[str, Any]]:
    """The dialog for a call the run left for the client (ADK's long-running tools and its
    confirmations, LlamaIndex's frontend tools, Agno's confirmations, pendingToolCallIds), and the
    schema its answer is checked against: a yes or no, built from the call's name and arguments (for
    ADK's confirmation, of the call it confirms); ADK's confirmation that asks for a payload
    (``request_confirmation(hint=..., payload=...)``) is its hint as a question, answered in the
    payload's shape."""
    redact = recorder.scrubber.redact
    name, arguments = call.name, call.arguments
    if call.name == ADK_CONFIRMATION:
        original, confirmation = _adk_confirmation(call)
        if confirmation.get("payload") is not None:
            schema = _example_schema(confirmation["payload"])
            hint = redact(_str(confirmation.get("hint"))) or "The agent asks for your answer."
            return _input("The agent asks", markdown_text(hint), schema), schema
        if original.get("name"):
            name = _str(original["name"])
            arguments = json.dumps(original.get("args"), ensure_ascii=False) if original.get("args") is not None else ""
    return _confirmation(" ".join(redact(name).split()), redact(arguments), ""), {}


AGNO = "agno"  # the source Agno's AG-UI interface names in its RAW events
ACCEPTED = "The user accepted this call."


def client_answer(call: ToolCall, accepted: bool, framework: str, *, why: str = "", value: Any = None) -> str:
    """The tool message that answers a call left to the client, in the shape its framework reads
    (``why``: why a call that was not accepted did not run; ``value``: the answer typed for ADK's
    confirmation that asks for a payload). ADK's confirmation reads ``{"confirmed": ..., "payload":
    ...}``. Agno's paused call ``{"accepted": ..., "values": {}}`` (a "no" with its ``note``, which
    Agno tells the agent): Agno's stream does not say which of its pauses a call is, and each reads
    its own key (a requires_user_input call's fields are not on the wire, so it gets none). Any other
    call gets words for its model: Agent Framework takes a tool message holding ``accepted`` for an
    approval of its own, and drops it."""
    if call.name == ADK_CONFIRMATION:
        return json.dumps({"confirmed": accepted, **({"payload": value} if accepted and value is not None else {})})
    if framework == AGNO:
        return json.dumps({"accepted": accepted, "values": {}, **({} if accepted else {"note": why})})
    return ACCEPTED if accepted else why


def tells_the_agent(call: ToolCall, framework: str) -> bool:
    """A call nobody answered that is still answered in a new run, as declined: ADK's confirmation
    and Agno's paused calls are approvals the framework holds open (an approval nobody gave is a
    "no" the agent hears). Any other call is closed as not run, and the agent reads so next turn."""
    return call.name == ADK_CONFIRMATION or framework == AGNO


# --- answers checked against the interrupt's responseSchema ------------------------------------------

_BOOLEANS = {"yes": True, "y": True, "true": True, "no": False, "n": False, "false": False}


def answer_hint(schema: Mapping[str, Any]) -> str:
    """The input's placeholder: what kind of answer the schema takes."""
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "One of: " + ", ".join(map(str, schema["enum"]))[:200]
    kind = schema.get("type")
    properties = _mapping(schema.get("properties"))
    if kind == "object" and len(properties) == 1:
        return answer_hint(_mapping(next(iter(properties.values()))))
    return {
        "integer": "A whole number",
        "number": "A number",
        "boolean": "yes or no",
        "array": "A JSON list",
        "object": "A JSON object",
    }.get(_str(kind), "Your answer")


def parse_answer(schema: Mapping[str, Any], text: str) -> tuple[Any, str]:
    """The typed answer the schema asks for, and "" — or None and why the text is not one."""
    kind, enum = schema.get("type"), schema.get("enum")
    properties = _mapping(schema.get("properties"))
    value: Any = text
    if kind == "object" and len(properties) == 1:  # one field: the answer is that field's value
        ((field, inner),) = properties.items()
        value, problem = parse_answer(_mapping(inner), text)
        return ({field: value}, "") if not problem else (None, problem)
    if kind == "integer":
        try:
            value = int(text.strip())
        except ValueError:
            return None, "The answer must be a whole number."
    elif kind == "number":
        try:
            value = float(text.strip())
        except ValueError:
            return None, "The answer must be a number."
        value = int(value) if value.is_integer() and "." not in text else value
    elif kind == "boolean":
        if text.strip().lower() not in _BOOLEANS:
            return None, "The answer must be yes or no."
        value = _BOOLEANS[text.strip().lower()]
    elif kind in ("object", "array"):
        value = _json_or_none(text)
        wanted = dict if kind == "object" else list
        if not isinstance(value, wanted):
            return None, f"The answer must be a JSON {'object' if kind == 'object' else 'list'}."
        missing = [k for k in schema.get("required") or [] if kind == "object" and k not in value]
        if missing:
            return None, "The answer must have " + ", ".join(map(str, missing)) + "."
    if isinstance(enum, list) and enum and value not in enum:
        return None, "The answer must be one of: " + ", ".join(map(str, enum)) + "."
    return value, ""


def resume_entry(interrupt: Mapping[str, Any], question: Mapping[str, Any], answer: Any) -> dict[str, Any]:
    """The AG-UI ``resume`` entry for the user's answer (None: nobody answered). A declined tool is
    resolved ``{"approved": false}`` (it does not run, the agent goes on); a question nobody
    answered is ``cancelled``, never an approval (Pydantic AI denies it, Strands answers its tool
    {"cancelled": true}; Agent Framework 1.0.0rc8 ends the run in an error)."""
    entry: dict[str, Any] = {"interruptId": _str(interrupt.get("id"))}
    if answer is None:
        return {**entry, "status": "cancelled"}
    if question["type"] == "confirmation":
        approval = "approved" in _mapping(_mapping(interrupt.get("responseSchema")).get("properties")) or (
            _mapping(interrupt.get("responseSchema")).get("type") != "boolean"
        )
        return {**entry, "status": "resolved", "payload": {"approved": answer is True} if approval else answer is True}
    return {**entry, "status": "resolved", "payload": answer}


def seconds_left(interrupt: Mapping[str, Any], now: float) -> float | None:
    """How long an interrupt stays answerable (its ``expiresAt``, ISO 8601), or None: no bound."""
    expires = _str(interrupt.get("expiresAt"))
    if not expires:
        return None
    try:
        moment = datetime.fromisoformat(expires.replace("Z", "+00:00"))
    except ValueError:
        return None  # not a date: the interrupt looks unexpired, as the protocol says
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp() - now


# --- begin agent_pipe/questions.py ---
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


# --- begin agent_pipe/failures.py ---
# === failures: what went wrong, as the user reads it ==============================================


def _host(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = parts.hostname or url
        host = f"[{host}]" if ":" in host else host
        return f"{host}:{parts.port}" if parts.port else host
    except ValueError:
        return "its configured address"


# What a failed request raised, by class name, so the texts below hold for any HTTP client
# (aiohttp today; httpx's names are listed too).
_CONNECT_FAILURES = {"ConnectError", "ConnectTimeout", "ClientConnectorError", "ConnectionTimeoutError"}
_TRANSPORT_FAILURES = {"TransportError", "ClientError"}


def _kinds(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _connect_reason(exc: BaseException) -> str:
    chain: list[BaseException] = []  # the client wraps the socket's error: read the whole chain
    cause: BaseException | None = exc
    while cause is not None and len(chain) < 5:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    text = " ".join(str(e) for e in chain).lower()
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return "connection refused: nothing listens there"
    if _kinds(exc) & {"ConnectTimeout", "ConnectionTimeoutError"} or "timed out" in text:
        return "connecting timed out"
    if "refused" in text:
        return "connection refused: nothing listens there"
    if any(s in text for s in ("name or service not known", "nodename nor servname", "name resolution", "getaddrinfo")):
        return "the host name does not resolve"
    if "certificate" in text or "ssl" in text or "tls" in text:
        return "the TLS handshake failed (certificate not trusted?)"
    if "unreachable" in text or "no route" in text:
        return "no network route to the host"
    return "the connection failed"


def failure_text(
    exc: BaseException, url: str, timeout: float, scrubber: Scrubber, *, started: Iterable[Any] = ()
) -> str:
    """What a chat user reads when a run fails, in plain words, keys masked.

    ``started``: the segments already recorded; when there are some, the text says the answer
    above is incomplete (it stays, the error goes below it).
    """
    host = _host(url)
    incomplete = " The answer above is incomplete." if any(True for _ in started) else ""
    if isinstance(exc, PipeConfigError):
        return scrubber.error(str(exc))
    if isinstance(exc, AgentHTTPError):
        try:
            reason = http.HTTPStatus(exc.status).phrase
        except ValueError:
            reason = "error"
        detail = scrubber.error(_short(scrubber.redact(exc.detail)))
        return f"The agent at {host} answered HTTP {exc.status} {reason}" + (f": {detail}" if detail else ".")
    kinds = _kinds(exc)
    if kinds & _CONNECT_FAILURES:
        return f"The agent cannot be reached at {host} ({_connect_reason(exc)})."
    if isinstance(exc, TimeoutError):
        return f"The agent did not finish within {timeout:g} seconds, so the run was stopped.{incomplete}"
    if isinstance(exc, EventTooLarge):
        return (
            f"The agent sent an event of more than {exc.limit / MB:g} MB (the pipe's MAX_EVENT_MB), "
            f"so the run was stopped.{incomplete}"
        )
    if isinstance(exc, StreamEndedEarly):
        return f"The agent's stream ended before the run finished.{incomplete}"
    if kinds & _TRANSPORT_FAILURES or isinstance(exc, OSError):
        when = "while it was answering" if incomplete else "before it answered"
        return f"The connection to the agent at {host} broke {when} ({type(exc).__name__}).{incomplete}"
    return f"The agent pipe failed ({type(exc).__name__}); the Open WebUI log has the details.{incomplete}"


def _short(detail: str) -> str:
    try:
        parsed = json.loads(detail)
        if isinstance(parsed, dict) and isinstance(parsed.get("detail"), str):
            detail = parsed["detail"]
    except ValueError:
        pass
    detail = " ".join(detail.split())
    return detail if len(detail) <= 200 else detail[:199] + "…"


# --- begin agent_pipe/probe.py ---
# === the admin's probe ============================================================================

PROBE_KEY = "aihub_probe"
PROBE_VERSION = 1
PROBE_TIMEOUT_SECONDS = 10.0
# AG-UI's event types (ag_ui.core.EventType): the first event of a run is one of these.
_AGUI_EVENTS = frozenset(
    {
        "RUN_STARTED",
        "RUN_FINISHED",
        "RUN_ERROR",
        "STEP_STARTED",
        "STEP_FINISHED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TEXT_MESSAGE_CHUNK",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_CHUNK",
        "TOOL_CALL_RESULT",
        "STATE_SNAPSHOT",
        "STATE_DELTA",
        "MESSAGES_SNAPSHOT",
        "RAW",
        "CUSTOM",
        "THINKING_START",
        "THINKING_END",
    }
)


def probe_requested(body: Mapping[str, Any], user: Mapping[str, Any] | None) -> bool:
    """A probe is honoured only for an admin; anyone else's marker is ignored."""
    return isinstance(body.get(PROBE_KEY), Mapping) and (user or {}).get("role") == "admin"


def replica_name() -> str:
    """Which Open WebUI process answered: host name and process id (two replicas differ)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def server_identity(identity_valve: str) -> dict[str, bool]:
    """What this process can tell an agent about the user (its environment, not the admin API's)."""
    settings = server_forward_settings()
    try:
        key = signing_key(identity_valve) is not None
    except Exception:  # a broken key is no key
        key = False
    return {
        "forward_user_info": settings.enabled,
        "user_jwt": settings.enabled and bool(settings.secret),
        "identity_key": key,
    }


def oauth_header_taken(agent: AgentSpec) -> bool:
    """Whether the agent's OAuth token header is one this server's forwarding settings already
    name (renamed in its environment, which no blueprint sees): its chats fail before anything
    is sent (Pipe.turn refuses the same names)."""
    name = (agent.oauth_token_header or "").lower()
    settings = server_forward_settings()
    return bool(name) and name in settings.header_names()


async def probe_backend(agent: AgentSpec, secret: str | None, scrubber: Scrubber) -> dict[str, Any]:
    """Reach the agent's backend once, from here; never raises. `secret` is its key (None: none)."""
    started = time.monotonic()
    result: dict[str, Any] = {"reached": False, "host": _host(agent.url), "transport": agent.transport}
    if agent.oauth_token_header:
        result["oauth_header_taken"] = oauth_header_taken(agent)
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    try:
        client = await shared_client()
        timeout = aiohttp.ClientTimeout(total=PROBE_TIMEOUT_SECONDS, sock_connect=PROBE_TIMEOUT_SECONDS)
        if agent.transport == "openai":
            url = agent.url.rstrip("/") + "/models"
            request = client.get(
                url, headers={**headers, "Accept": "application/json"}, timeout=timeout, proxy=_proxy_for(url)
            )
        else:
            url = agent.url
            # A thread of its own each time: a server that keeps threads (LangGraph's checkpointer)
            # would otherwise give every later probe's model the earlier probes' answers.
            probe_id = f"aihub-probe-{os.urandom(6).hex()}"
            run = {
                "threadId": probe_id,
                "runId": probe_id,
                "messages": [],
                "tools": [],
                "context": [],
                "state": {},
                "forwardedProps": {PROBE_KEY: True},
            }
            request = client.post(
                url,
                json=run,
                headers={**headers, "Accept": "text/event-stream"},
                timeout=timeout,
                proxy=_proxy_for(url),
            )
        async with request as response:
            result["status"] = response.status
            result["content_type"] = response.headers.get("Content-Type", "")
            if response.status >= 400:
                detail = (await response.content.read(2048)).decode("utf-8", "replace")
                result["reason"] = _http_reason(response.status, scrubber.error(_short(scrubber.redact(detail))))
            else:
                result.update(await _protocol(agent.transport, response))
    except PipeConfigError as exc:
        result["reason"] = scrubber.error(str(exc))
    except TimeoutError:
        result["reason"] = f"no answer within {PROBE_TIMEOUT_SECONDS:g} seconds"
    except Exception as exc:
        result["reason"] = (
            _connect_reason(exc) if _kinds(exc) & _CONNECT_FAILURES else f"the request failed ({type(exc).__name__})"
        )
    result["ms"] = round((time.monotonic() - started) * 1000)
    return result


def _http_reason(status: int, detail: str) -> str:
    if status in (401, 403):
        return f"answered HTTP {status}: the backend refused the key" + (f" ({detail})" if detail else "")
    return f"answered HTTP {status}" + (f": {detail}" if detail else "")


PROBE_READ_BYTES = 64 * 1024  # what a probe reads of a 2xx answer before it hangs up


async def _protocol(transport: str, response: Any) -> dict[str, Any]:
    """What a 2xx answer says about the protocol: read at most PROBE_READ_BYTES, then hang up."""
    raw = b""
    while len(raw) < PROBE_READ_BYTES:
        if transport != "openai" and b"\n\n" in raw:
            break
        more = await response.content.read(PROBE_READ_BYTES - len(raw))
        if not more:
            break
        raw += more
    text = raw.decode("utf-8", "replace")
    # Name what came: a web app's page at a wrong URL is text/html, not a stream without events.
    media = str(response.headers.get("Content-Type", "")).split(";")[0].strip().lower() or "no content type"
    if transport == "openai":
        try:
            data = json.loads(text)
        except ValueError:
            if len(raw) >= PROBE_READ_BYTES and media == "application/json" and text.lstrip().startswith("{"):
                return {"reached": True, "protocol": "openai"}  # a model list longer than the probe reads
            return {
                "reason": f"answered, but not as an OpenAI-compatible API ({media} at /models, not a JSON model list)"
            }
        if isinstance(data, Mapping) and isinstance(data.get("data"), list):
            return {"reached": True, "protocol": "openai"}
        return {"reason": "answered, but not as an OpenAI-compatible API (JSON at /models without a model list)"}
    event = _first_event(text)
    if event is not None:
        found: dict[str, Any] = {"reached": True, "protocol": "agui", "first_event": event.get("type")}
        # AG-UI 1.0 names its version in RUN_STARTED.protocolVersion (0.x servers say nothing).
        version = event.get("protocolVersion")
        if isinstance(version, str) and version.strip():
            found["agui_version"] = version.strip()[:40]
        return found
    if media != "text/event-stream":
        return {"reason": f"answered, but not as an AG-UI endpoint ({media}, not an AG-UI event stream)"}
    return {"reason": "answered, but not as an AG-UI endpoint (no AG-UI event in a text/event-stream)"}


def _first_event(text: str) -> dict[str, Any] | None:
    for line in text.splitlines():
        if line.startswith("data:"):
            try:
                event = json.loads(line[5:].strip())
            except ValueError:
                return None
            return event if isinstance(event, dict) and event.get("type") in _AGUI_EVENTS else None
    return None


# --- begin agent_pipe/pipe.py ---
# === the pipe: what Open WebUI calls ==============================================================


class Pipe:
    class Valves(BaseModel):
        AGENTS: str = Field(default="[]", description="JSON list of agents (written by provision sync).")
        API_KEYS: str = Field(default="{}", description="JSON object: key name -> secret, sent as a Bearer token.")
        TIMEOUT_SECONDS: float = Field(
            default=300, gt=0, allow_inf_nan=False, description="Longest an agent run may take, in seconds."
        )
        STREAM_INTERVAL_MS: float = Field(
            default=40,
            ge=0,
            le=1000,
            allow_inf_nan=False,
            description="Text that arrives within this many milliseconds of the last piece shown goes out "
            "together (0: every delta at once). The first text and the end of a run are never held.",
        )
        HISTORY_SIGNING_KEY: str = Field(
            default="",
            description="Secret that signs the tool blocks the pipe renders, so edited ones are not trusted "
            "next turn (written once by provision sync; never shown).",
        )
        QUESTION_TIMEOUT_SECONDS: float = Field(
            default=120,
            gt=0,
            allow_inf_nan=False,
            description="How long the pipe waits for the user to answer an agent's question (an approval).",
        )
        MAX_IMAGE_MB: float = Field(
            default=10,
            gt=0,
            allow_inf_nan=False,
            description="Largest image an agent may show in a chat, in MB; a larger one gets a line instead.",
        )
        MAX_IMAGES: int = Field(
            default=MAX_IMAGES,
            ge=0,
            description="Most images (stored, or attached as links) an agent may show in one answer; the rest "
            "get one line instead.",
        )
        MAX_TURN_IMAGES_MB: float = Field(
            default=MAX_TURN_IMAGES_MB,
            gt=0,
            allow_inf_nan=False,
            description="Most MB of images an agent may store in one answer; the rest get one line instead.",
        )
        MAX_EVENT_MB: float = Field(
            default=16,
            gt=0,
            allow_inf_nan=False,
            description="Largest line or event of an agent's stream, in MB; a larger one ends the run with an "
            "error (keep it above 4/3 of MAX_IMAGE_MB: an image arrives as base64 in one event).",
        )
        IDENTITY_KEYS: str = Field(
            default="",
            description="JSON: the Ed25519 key that signs the X-AIHub-Identity token (`signing`, the only one "
            "that signs), a staged key published before it signs, and retired public keys (written by provision "
            "sync; never shown). The server's AIHUB_IDENTITY_PRIVATE_KEY wins.",
        )
        MAX_FILE_MB: float = Field(
            default=20, gt=0, allow_inf_nan=False, description="Largest attached file sent to an agent, in MB."
        )
        MAX_FILE_REFERENCES: int = Field(
            default=MAX_FILE_REFERENCES,
            ge=0,
            description="Most attached files looked up for one request to an agent; the rest are named in one line.",
        )
        MAX_TURN_FILES_MB: float = Field(
            default=50,
            gt=0,
            allow_inf_nan=False,
            description="Most MB of attached files one request to an agent carries (the newest message's first).",
        )

    def __init__(self) -> None:
        self.type = "manifold"
        self.valves = self.Valves()
        self.store: Any = OpenWebUIStore()  # where attached files are read from (tests put a fake here)
        self.groups_cache = GroupsCache()

    # -- configuration --------------------------------------------------------------------------

    def agents(self) -> list[AgentSpec]:
        """The AGENTS valve, entries that do not validate left out (never raises)."""
        return list(_parse_agents(self.valves.AGENTS).values())

    def pipes(self) -> list[dict[str, str]]:
        return [{"id": agent.id, "name": agent.name} for agent in self.agents()]

    def _agent_for(self, model: Any) -> AgentSpec | None:
        """``<function id>.<blueprint>.<agent>`` -> the agent; a function id never has a dot."""
        _, _, sub_id = _str(model).partition(".")
        return _parse_agents(self.valves.AGENTS).get(sub_id)

    def _headers(self, agent: AgentSpec) -> dict[str, str]:
        headers = {"Accept": "text/event-stream", "Content-Type": "application/json"}
        if agent.api_key:
            headers["Authorization"] = f"Bearer {self._secret(agent)}"
        return headers

    def _synced_keys(self) -> Mapping[str, str]:
        return _parse_keys(self.valves.API_KEYS)

    def _secret(self, agent: AgentSpec) -> str:
        """The agent's key: from API_KEYS, or read now from the server's environment."""
        name = agent.api_key or ""
        if agent.key_from == "server":
            if not _ENV_NAME.fullmatch(name) or name.upper().startswith(_OPENWEBUI_SECRETS):
                raise PipeConfigError(
                    f"The agent's key variable {name!r} is not allowed: the pipe never sends Open WebUI's own "
                    "settings to an agent."
                )
            secret = os.environ.get(name, "")
            if not secret:
                raise PipeConfigError(
                    f"The agent's API key is read from the environment variable {name} of the Open WebUI "
                    f"server, and {name} is not set there. An administrator has to set it and restart Open WebUI."
                )
            return secret
        synced = self._synced_keys().get(name)
        if not synced:
            raise PipeConfigError(f"The API key '{name}' is not configured in the pipe's API_KEYS valve.")
        return synced

    def scrubber(self) -> Scrubber:
        """Masks every key this pipe holds: API_KEYS, the signing key, keys it reads from the environment."""
        from_server = tuple(os.environ.get(name, "") for name in _server_key_names(self.valves.AGENTS))
        from_server += identity_secrets(self.valves.IDENTITY_KEYS)
        return _scrubber(frozenset(self._synced_keys().values()), self.valves.HISTORY_SIGNING_KEY, from_server)

    async def probe(self, agent: AgentSpec) -> str:
        """The answer to an admin's probe (probe.py): one JSON object, keys masked."""
        scrubber = self.scrubber()
        answer: dict[str, Any] = {
            PROBE_KEY: PROBE_VERSION,
            "agent": agent.id,
            "replica": replica_name(),
            "identity": agent.identity,
            **server_identity(self.valves.IDENTITY_KEYS),
        }
        try:
            secret = self._secret(agent) if agent.api_key else None
        except PipeConfigError as exc:
            answer.update(
                reached=False, host=_host(agent.url), transport=agent.transport, reason=scrubber.error(str(exc))
            )
        else:
            answer.update(await probe_backend(agent, secret, scrubber))
        # Keys masked whole. Not withheld for a shared fragment, as a chat's error is: the fields are
        # the pipe's own (agent id, host, process) and a reason probe_backend scrubbed already, and an
        # agent id with 8 characters of a key in it would withhold the answer doctor must read.
        return scrubber.redact(json.dumps(answer))

    # -- files ----------------------------------------------------------------------------------

    async def inbound_files(
        self,
        history: list[Mapping[str, Any]],
        user: Mapping[str, Any],
        metadata: Mapping[str, Any],
        agent: AgentSpec,
        emitter: EventEmitter,
        chat: TurnChat,
    ) -> InboundFiles:
        """The history with the user's files inside the messages they were attached to.

        A chat without file references costs nothing here (no store read). Images Open WebUI put
        into the messages itself obey the same limits and ``reads`` (screen_inline_images). What
        is left out is told to the user in one warning, in the same words the agent gets.
        """
        limits = FileLimits(int(self.valves.MAX_FILE_MB * MB), int(self.valves.MAX_TURN_FILES_MB * MB))
        history, inline_left_out, budget = screen_inline_images(history, limits, kinds_read(agent.reads))
        chat_files = metadata.get("files")
        own = any(isinstance(m, Mapping) and m.get("files") for m in history)
        if not chat_files and not own:
            found = InboundFiles(with_files(history, {}), left_out=inline_left_out)
            if inline_left_out:
                await _notify(emitter, left_out_notice(inline_left_out))
            return found
        stored = await chat.get()  # without it, the files go on the newest message
        placed = place_files(history, chat_files or [], stored.files() if stored else None)
        parts = await read_files(
            placed,
            store=self.store,
            user=user,
            limits=limits,
            reads=agent.reads,
            budget=budget,
            max_files=self.valves.MAX_FILE_REFERENCES,
        )
        found = InboundFiles(with_files(history, parts), left_out=list(inline_left_out))
        for index in sorted(parts):
            for part in parts[index]:
                if isinstance(part, Attachment):
                    found.attachments.append(part)
                else:
                    found.left_out.append(part)
        if found.left_out:
            await _notify(emitter, left_out_notice(found.left_out))
        return found

    @staticmethod
    async def known_ids(history: list[Mapping[str, Any]], chat: TurnChat) -> list[list[Mapping[str, Any]]] | None:
        """The agent's own ids of the earlier answers, as the stored chat kept them (agent_ids.py).
        A chat with no earlier answer costs no store read; without them the ids are the pipe's own."""
        if not any(isinstance(m, Mapping) and m.get("role") == "assistant" for m in history):
            return None
        stored = await chat.get()
        return stored.answers() if stored else None

    # -- identity, ids, trace and context ---------------------------------------------------------

    async def turn(
        self, agent: AgentSpec, model: str, user: Mapping[str, Any], metadata: Mapping[str, Any], oauth_token: Any
    ) -> "Turn":
        """Who asks, in which chat and message, under which trace: what every request carries.

        Never raises: a failure (``identity: signed`` without a key, an OAuth token that would go
        over plain http) is kept and raised where it becomes the chat's error alert.
        """
        parent = traceparent()
        turn = Turn(
            chat_id=_str(metadata.get("chat_id")),
            message_id=_str(metadata.get("message_id")),
            user_message_id=_str(metadata.get("user_message_id")),
            traceparent=parent,
            trace_id=trace_id(parent),
            context=user_context(metadata),
        )
        turn.headers["traceparent"] = parent
        settings = server_forward_settings()
        if agent.transport == "openai":
            turn.headers.update(session_headers(settings, turn.chat_id, turn.message_id))
        if agent.identity != "none":
            turn.user_id = _str(user.get("id"))
        turn.forwarded = {
            key: value
            for key, value in (
                ("user_id", turn.user_id),
                ("message_id", turn.message_id),
                ("user_message_id", turn.user_message_id),
            )
            if value
        }
        try:
            identity = await self._identity(agent, model, user, turn, settings) if agent.identity != "none" else {}
            delegated = oauth_header(agent, oauth_token)
            taken = {h.lower() for h in (*turn.headers, *identity)} | settings.header_names()
            if any(h.lower() in taken for h in delegated):  # a forwarding header renamed in the server's env
                raise PipeConfigError(
                    "The agent asks for the user's OAuth token in a header the pipe already sends (Open WebUI's "
                    "forwarding settings name it); an administrator has to give it a header of its own. "
                    "Nothing was sent to the agent."
                )
        except PipeConfigError as exc:
            turn.failure = exc
            identity, delegated = {}, {}
        turn.headers.update(identity)
        turn.headers.update(delegated)
        signed = [identity.get(settings.jwt_header, ""), identity.get(IDENTITY_HEADER, "")] if identity else []
        if secrets := [*signed, *delegated.values(), *_oauth_secrets(oauth_token)]:
            turn.mask = TokenMask(secrets)
        return turn

    async def _identity(
        self, agent: AgentSpec, model: str, user: Mapping[str, Any], turn: "Turn", settings: ForwardSettings
    ) -> dict[str, str]:
        """The identity headers of an agent that asks for one; the user's groups are read only
        when a token will carry them."""
        key = signing_key(self.valves.IDENTITY_KEYS)
        groups: list[dict[str, str]] = []
        if needs_groups(agent, settings, key):
            try:
                groups = await self.groups_cache.groups(self.store, turn.user_id)
            except Exception as exc:  # the token still says who; without groups an agent denies more
                log.warning(
                    "aihub_agent_pipe: reading the user's groups failed (%s), trace %s",
                    type(exc).__name__,
                    turn.trace_id,
                )
        claims = identity_claims(
            user,
            groups,
            model=model,
            chat_id=turn.chat_id,
            message_id=turn.message_id,
            now=int(time.time()),
            lifetime=settings.lifetime,
        )
        return identity_headers(agent, claims, settings, key)

    # -- the request ----------------------------------------------------------------------------

    async def pipe(
        self,
        body: dict[str, Any],
        __user__: dict[str, Any] | None = None,
        __metadata__: dict[str, Any] | None = None,
        __event_emitter__: EventEmitter = None,
        __task__: str | None = None,
        __request__: Any = None,
        __event_call__: Any = None,
        __oauth_token__: Any = None,
    ) -> AsyncIterator[str | dict[str, Any]]:
        """Stream the agent's answer as Open WebUI content (see the comment at the top).

        Never raises: every failure ends the answer with an error alert below what had streamed.
        """
        if __task__:
            # Title/tag/follow-up tasks are Open WebUI housekeeping and must not run the agent.
            # "{}" makes Open WebUI fall back to its defaults (e.g. the user's message as title).
            yield "{}"
            return
        agent = self._agent_for(body.get("model"))
        if agent is None:
            yield render_error(Error(f"No agent is configured for the model '{_str(body.get('model'))}'."))
            return
        if probe_requested(body, __user__):  # an admin's `provision doctor`: reach the backend, nothing else
            yield await self.probe(agent)
            return
        metadata = __metadata__ or {}
        user = __user__ or {}
        features = requested_features(metadata, agent.features)
        chat = TurnChat(
            self.store,
            _str(metadata.get("chat_id")),
            _str(user.get("id")),
            _str(metadata.get("user_message_id")) or _str(metadata.get("message_id")),
        )
        inbound = await self.inbound_files(body.get("messages") or [], user, metadata, agent, __event_emitter__, chat)
        history = inbound.history
        turn = await self.turn(agent, _str(body.get("model")), user, metadata, __oauth_token__)
        signer = history_signer(self.valves.HISTORY_SIGNING_KEY, agent.id, __user__, metadata)
        scrubber = self.scrubber()
        if agent.transport == "openai":
            payload = openai_request(agent, history, signer, turn, features)
            input_ids: list[str] = []
        else:
            payload = agui_request(history, signer, turn, features, await self.known_ids(history, chat))
            input_ids = [m["id"] for m in payload["messages"]]
        recorder = Recorder(
            input_ids=input_ids,
            scrubber=scrubber,
            signer=signer,
            error_note=f" (trace {turn.trace_id})",  # also on the agent's own RUN_ERROR
            outbound=Outbound(
                scrubber,
                max_image_bytes=int(self.valves.MAX_IMAGE_MB * MB),
                max_images=self.valves.MAX_IMAGES,
                max_turn_image_bytes=int(self.valves.MAX_TURN_IMAGES_MB * MB),
            ),
        )
        status = StatusLine(__event_emitter__)
        status.later({"description": f"Asking {agent.name}…", "done": False}, ASKING_DELAY_SECONDS)
        batch = Batch(self.valves.STREAM_INTERVAL_MS / 1000)
        try:
            if turn.failure is not None:
                raise turn.failure
            headers = {**self._headers(agent), **turn.headers}
            client = await shared_client()
            run = run_with_questions(
                AgentRun(
                    client=client,
                    agent=agent,
                    headers=headers,
                    payload=payload,
                    recorder=recorder,
                    batch=batch,
                    status=status,
                    timeout=self.valves.TIMEOUT_SECONDS,
                    event_call=__event_call__,
                    question_timeout=self.valves.QUESTION_TIMEOUT_SECONDS,
                    attachments=inbound.attachments,
                    max_event=int(self.valves.MAX_EVENT_MB * MB),
                )
            )
            try:
                async for chunk in run:
                    status.shown()
                    for piece in _safe_chunks(turn.mask.stream(chunk)):
                        yield piece
            finally:
                status.shown()  # also when the chat was stopped: no "Asking…" after that
                await run.aclose()  # a cancelled chat (stop) closes the agent's request here, at once
            if not recorder.finished:
                raise StreamEndedEarly
        except Exception as exc:  # the chat must get an answer, never a broken stream
            message = failure_text(exc, agent.url, self.valves.TIMEOUT_SECONDS, scrubber, started=recorder.segments)
            message = turn.mask.error(message)
            expected = (PipeConfigError, AgentHTTPError, StreamEndedEarly, EventTooLarge, TimeoutError, OSError)
            if isinstance(exc, expected) or (_kinds(exc) & (_CONNECT_FAILURES | _TRANSPORT_FAILURES)):
                log.warning(
                    "aihub_agent_pipe: agent %s, trace %s: %s", agent.id, turn.trace_id, scrubber.error(message)
                )
            else:
                trace = turn.mask.redact(scrubber.redact("".join(traceback.format_exception(exc))))
                log.error(
                    "aihub_agent_pipe: unexpected error for agent %s, trace %s\n%s", agent.id, turn.trace_id, trace
                )
            recorder.finish(error=message)
        for chunk in _safe_chunks(turn.mask.stream(batch.take())):  # held text goes out before the error
            yield chunk
        for update in recorder.take_statuses():
            await status.send(update)
        for chunk in _safe_chunks(turn.mask.stream(recorder.drain()) + turn.mask.flush()):
            yield chunk
        where = {"request": __request__, "user": __user__, "metadata": metadata}
        async for extra in outbound_end(recorder.outbound, __event_emitter__, bool(body.get("stream")), where):
            yield extra
