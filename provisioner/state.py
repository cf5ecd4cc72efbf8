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

Kind = Literal["function", "model"]

MANAGED_BY = "aihub-provision"
MARKER_KEY = "aihub"  # meta.aihub on every model row and function the project owns


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
