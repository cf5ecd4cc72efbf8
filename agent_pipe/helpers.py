"""Small conversions every part uses, among them the two rules for message content as text."""

import json
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

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
