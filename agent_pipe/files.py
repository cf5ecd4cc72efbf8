"""Which files the user attached, on which message they go, and how each becomes a content part."""

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_pipe.constants import MB, RASTER_IMAGES
from agent_pipe.helpers import _str

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
