"""Turn a blueprint's `icon:` value into something Open WebUI will show.

Accepted: an https URL without credentials, a `data:image/...;base64,` URI, or a path to an image file next to the
YAML (inlined as a data URI). Open WebUI silently drops model images that are not PNG, JPEG, GIF
or WebP data URIs, so SVG is accepted for toggle icons only.

Layer: source.
"""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path

from .paths import resolved_inside
from .urls import credential_in_url

MAX_ICON_BYTES = 64 * 1024

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
_DATA_URI = re.compile(r"^data:(image/[a-z0-9.+-]+);base64,([A-Za-z0-9+/=\s]*)$")
MODEL_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def sniff_image_type(data: bytes) -> str | None:
    """The image type from the first bytes, or None if it is not an image we know."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    head = data[:512].lstrip().lower()
    if head.startswith(b"<svg") or (head.startswith(b"<?xml") and b"<svg" in data[:2048].lower()):
        return "image/svg+xml"
    return None


def resolve_icon(value: str, base_dir: Path, *, allow_svg: bool) -> str:
    """Return the icon as Open WebUI should store it; raise ValueError saying what is wrong."""
    allowed = MODEL_IMAGE_TYPES | ({"image/svg+xml"} if allow_svg else set())
    kinds = "PNG, JPEG, GIF, WebP" + (" or SVG" if allow_svg else "")
    value = value.strip()
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", value):
        # Every chat user's browser loads an icon URL and anyone can read it in the model list.
        if not re.match(r"^https://\S+$", value, re.IGNORECASE):
            raise ValueError("an icon URL must be https:// (every chat user's browser loads it)")
        why = credential_in_url(value)
        if why:
            raise ValueError(f"{why}; every chat user can read an icon's URL")
        return value
    if value.startswith("data:"):
        match = _DATA_URI.match(value)
        if not match:
            raise ValueError("a data URI icon must look like data:image/<type>;base64,<data>")
        try:
            raw = base64.b64decode("".join(match.group(2).split()), validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("the icon's base64 data does not decode") from None
        return _checked(raw, declared=match.group(1), allowed=allowed, kinds=kinds)
    return _checked(_read_icon_file(value, base_dir), declared=None, allowed=allowed, kinds=kinds)


def _read_icon_file(value: str, base_dir: Path) -> bytes:
    """The bytes of an icon file that lives inside the blueprint directory, or ValueError."""
    try:
        path = resolved_inside(base_dir, value)
    except ValueError:  # a symlink loop, a NUL byte in the name
        raise ValueError(f"icon file {value!r} cannot be resolved (a symlink loop?)") from None
    if path is None:
        raise ValueError(f"icon file {value!r} is outside the blueprint directory; keep icons next to the YAML")
    if not path.exists():
        raise ValueError(f"icon file {value!r} not found next to the YAML")
    if not path.is_file():  # a directory, a FIFO or a device: never open it
        raise ValueError(f"icon file {value!r} is not a regular file")
    size = path.stat().st_size
    if size > MAX_ICON_BYTES:
        raise ValueError(f"icon file {value!r} is {size} bytes; the limit is {MAX_ICON_BYTES}")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ValueError(f"icon file {value!r} cannot be read: {exc.strerror or exc}") from None


def _checked(raw: bytes, *, declared: str | None, allowed: frozenset[str] | set[str], kinds: str) -> str:
    if len(raw) > MAX_ICON_BYTES:
        raise ValueError(f"icon is {len(raw)} bytes; the limit is {MAX_ICON_BYTES}")
    actual = sniff_image_type(raw)
    if actual is None:
        raise ValueError(f"icon is not an image ({kinds} expected)")
    if declared and declared != actual:
        raise ValueError(f"icon says {declared} but holds {actual}")
    if actual not in allowed:
        raise ValueError(f"icon is {actual}; Open WebUI shows only {kinds} here")
    return f"data:{actual};base64,{base64.b64encode(raw).decode('ascii')}"
