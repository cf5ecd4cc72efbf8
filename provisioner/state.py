"""Shapes shared by both sides of the comparison: what should be, and what is.

Desired state (from the blueprints) and observed state (from Open WebUI's listings) become the
same types before anything is compared, so plan.py compares like with like. Each object keeps
only the fields the project owns, as flat `path -> value` pairs; the observed side also keeps
the raw record so an update can carry every field we do not own unchanged (read-merge-write).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

# The marker (meta.aihub on every row and function provision owns) and the bundle's id prefix.
from .contract import BUNDLE_PREFIX, MANAGED_BY, MARKER_KEY  # noqa: F401  (re-exported)

Kind = Literal["function", "model"]

# The marker's key for the provision version that last wrote the object. It is written on every
# write but never compared, so upgrading provision alone changes nothing on the instance.
VERSION_KEY = "version"


@dataclass(frozen=True)
class ObjectState:
    """One model row or function: its owned fields, flat, plus the raw record if observed."""

    kind: Kind
    id: str
    fields: Mapping[str, Any]
    managed: bool = True
    raw: Mapping[str, Any] | None = None
    # Field paths whose values are secrets: compared, never shown.
    sensitive: frozenset[str] = frozenset()
    # The provision version that wrote it (observed) or will write it (desired); None: unknown.
    written_by: str | None = None
    # Desired only: the blueprint or function file it comes from (for the history's commit message).
    source: str | None = None


# The marker's key for the fingerprint of what sync wrote (fingerprint.py); never compared either.
FINGERPRINT_KEY = "written"


def split_marker(marker: Any) -> tuple[Any, str | None]:
    """The ownership marker without its version and fingerprint (the part compared), and the version."""
    if not isinstance(marker, dict) or not ({VERSION_KEY, FINGERPRINT_KEY} & set(marker)):
        return marker, None
    version = marker.get(VERSION_KEY)
    compared = {k: v for k, v in marker.items() if k not in (VERSION_KEY, FINGERPRINT_KEY)}
    return compared, str(version) if version else None


@dataclass(frozen=True)
class InstanceState:
    functions: Mapping[str, ObjectState] = field(default_factory=dict)
    models: Mapping[str, ObjectState] = field(default_factory=dict)

    def of_kind(self, kind: Kind) -> Mapping[str, ObjectState]:
        return self.functions if kind == "function" else self.models


def is_managed(meta: Any) -> bool:
    """True when a record's meta carries our ownership marker."""
    return isinstance(meta, dict) and isinstance(meta.get(MARKER_KEY), dict) and (
        meta[MARKER_KEY].get("managed_by") == MANAGED_BY
    )


def get_path(record: Mapping[str, Any], path: str) -> Any:
    """Read `a.b.c` from nested dicts; None where any step is missing."""
    current: Any = record
    for part in path.split("."):
        if not isinstance(current, Mapping):
            return None
        current = current.get(part)
    return current


def set_path(record: dict[str, Any], path: str, value: Any) -> None:
    """Write `a.b.c` into nested dicts, replacing non-dict steps."""
    parts = path.split(".")
    current = record
    for part in parts[:-1]:
        nxt = current.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            current[part] = nxt
        current = nxt
    current[parts[-1]] = value
