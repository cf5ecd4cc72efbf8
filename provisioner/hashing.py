"""Short, stable hashes: of a JSON value (the fingerprint in the marker) and of a function's
source (what a plan shows instead of the text). Imports nothing.

Layer: vocabulary.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

DIGEST_CHARS = 12


def content_hash(content: str) -> str:
    """The sha256 of a function's source (plans show its first 12 characters, never the text)."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def digest(value: Any) -> str:
    """A short, stable hash of a JSON value (keys sorted, so dict order does not count)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_CHARS]
