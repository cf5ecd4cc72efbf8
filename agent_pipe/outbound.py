"""What shows beside the answer: token usage, sources, images and steps."""

import base64
import inspect
import json
import re
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import quote, urlsplit

from agent_pipe.constants import (
    IMAGE_EVENT,
    MAX_IMAGES,
    MAX_SOURCES,
    MAX_TURN_IMAGES_MB,
    MB,
    SOURCE_EVENT,
)
from agent_pipe.helpers import EventEmitter, _json_or_none, _str, log
from agent_pipe.recorder import Recorder
from agent_pipe.secrets import Scrubber
from agent_pipe.segments import ToolCall, ToolStep
from agent_pipe.transport import _emit, _emit_event
from agent_pipe.usage import _add_counts, openwebui_usage, usage_counts

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
