"""Shapes shared by both sides of the comparison: what should be, and what is.

Desired state (from the blueprints) and observed state (from Open WebUI's listings) become the
same types before anything is compared, so plan.py compares like with like. Each object keeps
only the fields the project owns, as flat `path -> value` pairs; the observed side also keeps
the raw record so an update can carry every field we do not own unchanged (read-merge-write).

Layer: core.
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
    # Desired only: maps provision owns whole (`meta.i18n`): an owned path under one that the
    # desired fields lack is removed from the row, where other fields absent are left alone.
    owned_maps: frozenset[str] = frozenset()


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
    return (
        isinstance(meta, dict)
        and isinstance(meta.get(MARKER_KEY), dict)
        and (meta[MARKER_KEY].get("managed_by") == MANAGED_BY)
    )


def get_path(record: Mapping[str, Any], path: str) -> Any:
    """Read `a.b.c` from nested dicts; None where any step is missing."""
    current: Any = record
    for part in path.split("."):
        if not isinstance(current, Mapping):
            return None
        current = current.get(part)
    return current


# The keys of a locale's entry in `meta.i18n` that provision writes (Open WebUI 0.12 reads them:
# localizedContent.ts); an admin's other keys there (model controls, valves) are not ours.
I18N_KEY = "meta.i18n"
MODEL_I18N_FIELDS = ("name", "description", "suggestion_prompts")
FUNCTION_I18N_FIELDS = ("name", "description")


def i18n_fields(meta: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    """`meta.i18n.<locale>.<key>` -> value, for each of `keys` a locale's entry holds."""
    table = meta.get("i18n") if isinstance(meta, Mapping) else None
    if not isinstance(table, Mapping):
        return {}
    return {
        f"{I18N_KEY}.{locale}.{key}": entry[key]
        for locale, entry in sorted(table.items(), key=lambda item: str(item[0]))
        if isinstance(locale, str) and "." not in locale and isinstance(entry, Mapping)
        for key in keys
        if entry.get(key) is not None
    }


def delete_path(record: dict[str, Any], path: str) -> None:
    """Remove `a.b.c` from nested dicts, and every dict the removal leaves empty on the way."""
    parts = path.split(".")
    chain: list[dict[str, Any]] = [record]
    for part in parts[:-1]:
        nxt = chain[-1].get(part)
        if not isinstance(nxt, dict):
            return
        chain.append(nxt)
    chain[-1].pop(parts[-1], None)
    for depth in range(len(chain) - 1, 0, -1):
        if chain[depth]:
            break
        chain[depth - 1].pop(parts[depth - 1], None)


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
