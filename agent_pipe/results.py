"""A tool result as the text it holds, and an AG-UI 1.0 image part as the Outbound reads it."""

import json
from collections.abc import Mapping
from typing import Any

from agent_pipe.helpers import _json_or_none, _str

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
