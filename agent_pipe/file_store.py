"""The request body with files in it, and reading the files from Open WebUI's own store."""

import asyncio
import functools
import inspect
import json
import os
import re
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agent_pipe.agent_ids import stored_agent_messages
from agent_pipe.constants import BASE64_BLOCK, FILE_REFERENCE_TYPES, MAX_FILE_REFERENCES, RASTER_IMAGES, FileTooLarge
from agent_pipe.files import (
    Attachment,
    FileLimits,
    LeftOut,
    StoredFile,
    _limit_mb,
    _mb,
    _reference_id,
    _reference_name,
    kinds_read,
    stored_branch,
    stored_user_files,
)
from agent_pipe.helpers import _str, log, random_hex


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
