"""A fingerprint of what sync wrote, kept in the ownership marker, to tell who changed a field. Pure.

Each write records, per owned field, a short hash of the value it wrote
(`meta.aihub.written = {path: hash}`). Later, for a field where the instance and the blueprints
differ, the hash says which side moved: the live value no longer matches it (changed in Open
WebUI), the blueprint's no longer does (the blueprint changed), or both. Hashes, not values: a
marker must stay small, and a valve's value must not be copied into meta. Secret fields are left
out (a short hash of a short secret could be guessed).

Layer: core.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from .hashing import digest
from .state import FINGERPRINT_KEY, MARKER_KEY, ObjectState

Origin = Literal["blueprint", "openwebui", "both"]


# A function's flags are flipped after the write that records the fingerprint; a sync cut off
# in between must not make the flag look changed in Open WebUI.
_UNRECORDED = {"function": frozenset({"is_active", "is_global"}), "model": frozenset()}


def fingerprint(target: ObjectState) -> dict[str, str]:
    """The hashes a write of `target` records: every owned field but the marker, secrets and a
    function's flags."""
    return {
        path: digest(value)
        for path, value in sorted(target.fields.items())
        if path != f"meta.{MARKER_KEY}" and path not in target.sensitive and path not in _UNRECORDED[target.kind]
    }


def recorded(live: ObjectState) -> dict[str, str] | None:
    """The fingerprint the last sync left on a live object; None when it left none."""
    meta = (live.raw or {}).get("meta")
    marker = meta.get(MARKER_KEY) if isinstance(meta, Mapping) else None
    written = marker.get(FINGERPRINT_KEY) if isinstance(marker, Mapping) else None
    if not isinstance(written, Mapping):
        return None
    return {str(k): str(v) for k, v in written.items()}


def origin(path: str, live_value: Any, desired_value: Any, written: Mapping[str, str] | None) -> Origin | None:
    """Which side changed `path` since the last sync; None when that sync recorded no hash for it."""
    if written is None or path not in written:
        return None
    live_moved = digest(live_value) != written[path]
    blueprint_moved = digest(desired_value) != written[path]
    if live_moved and blueprint_moved:
        return "both"
    if live_moved:
        return "openwebui"
    return "blueprint"


def drifted_paths(live: ObjectState) -> list[str] | None:
    """The owned fields whose live value differs from what the last sync wrote (no blueprints
    needed); None when the object carries no fingerprint."""
    written = recorded(live)
    if written is None:
        return None
    return [path for path, h in written.items() if digest(live.fields.get(path)) != h]
