"""Drift: owned fields changed in Open WebUI since the last sync, and who changed them.

What changed needs no blueprints: the marker's fingerprint (fingerprint.py) holds a hash of
each field sync wrote, and a live value that no longer matches it was changed in Open WebUI.
Who and when come from Open WebUI's version history (0.12+): the oldest of the newest versions
that already hold the live value is the one that introduced it. Fields the history does not
snapshot (access, a function's valves and flags) and releases without history are reported
without a name. `find_drift` and `attribute` are pure; `trace` reads the history.

Layer: adapter.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ProvisionError
from ..fingerprint import digest, drifted_paths
from ..state import InstanceState, Kind, get_path

FORMAT_VERSION = "1"
# Versions read per object, newest first: enough for a few hand edits between two syncs.
MAX_VERSIONS = 10
# Where an object's history snapshot holds a field (model: name, base_model_id, params, meta;
# function: name, content, meta). Other fields are not in it.
_SNAPSHOT_ROOTS = {"model": ("name", "base_model_id", "meta."), "function": ("name", "content", "meta.")}


@dataclass(frozen=True)
class Author:
    name: str | None
    email: str | None
    at: int | None  # epoch seconds of the version

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "email": self.email, "at": self.at, "at_text": when(self.at)}


@dataclass(frozen=True)
class ObjectDrift:
    kind: Kind
    id: str
    paths: tuple[str, ...]


def find_drift(observed: InstanceState) -> tuple[list[ObjectDrift], list[tuple[Kind, str]]]:
    """Managed objects with fields changed since the last sync, and managed objects whose marker
    has no fingerprint yet (written by a provision before it recorded one)."""
    drifted: list[ObjectDrift] = []
    untracked: list[tuple[Kind, str]] = []
    for kind in ("function", "model"):
        for ident, live in sorted(observed.of_kind(kind).items()):
            if not live.managed:
                continue
            paths = drifted_paths(live)
            if paths is None:
                untracked.append((kind, ident))
            elif paths:
                drifted.append(ObjectDrift(kind, ident, tuple(sorted(paths))))
    return drifted, untracked


def in_snapshot(kind: Kind, path: str) -> bool:
    return any(path == root or (root.endswith(".") and path.startswith(root)) for root in _SNAPSHOT_ROOTS[kind])


def attribute(
    kind: Kind,
    paths: Iterable[str],
    current: Mapping[str, Any],
    entries: Sequence[Mapping[str, Any]],
    snapshot: Callable[[Mapping[str, Any]], Mapping[str, Any] | None],
) -> dict[str, Mapping[str, Any]]:
    """path -> the history entry that introduced its live value (entries newest first)."""
    found: dict[str, Mapping[str, Any]] = {}
    for path in paths:
        if not in_snapshot(kind, path):
            continue
        want = digest(current.get(path))
        introduced = None
        for entry in entries:
            data = snapshot(entry)
            if data is None or digest(_snapshot_value(data, path)) != want:
                break
            introduced = entry
        if introduced is not None:
            found[path] = introduced
    return found


def _snapshot_value(snapshot: Mapping[str, Any], path: str) -> Any:
    value = get_path(snapshot, path)
    if path == "meta.actionIds" and value is None:  # observed.py reads a missing list as []
        return []
    return value


def in_order(entries: Sequence[Mapping[str, Any]], head: Any) -> list[Mapping[str, Any]]:
    """The versions newest first by their parent links, from `head` (the object's version_id):
    the listing orders by second, so two writes within one second may come out swapped."""
    by_id = {str(e.get("id")): e for e in entries}
    if str(head) not in by_id:
        return list(entries)
    ordered: list[Mapping[str, Any]] = []
    current = by_id.get(str(head))
    while current is not None and current not in ordered:
        ordered.append(current)
        current = by_id.get(str(current.get("parent_id")))
    return ordered


def trace(
    client: Any, kind: Kind, ident: str, paths: Sequence[str], current: Mapping[str, Any], head: Any = None
) -> dict[str, Author]:
    """Who introduced each path's live value, from the instance's history (`head`: the object's
    version_id); {} where the release keeps none or the history cannot be read (drift is still
    reported, without a name)."""
    if not client.compat.history or not any(in_snapshot(kind, p) for p in paths):
        return {}
    snapshots: dict[str, Mapping[str, Any] | None] = {}

    def snapshot(entry: Mapping[str, Any]) -> Mapping[str, Any] | None:
        key = str(entry.get("id"))
        if key not in snapshots:
            data = client.history_entry(kind, ident, key)
            snapshots[key] = data.get("snapshot") if isinstance(data, Mapping) else None
        return snapshots[key]

    try:
        entries = in_order(client.history(kind, ident), head)[:MAX_VERSIONS]
        introduced = attribute(kind, paths, current, entries, snapshot)
        emails = _emails(client, {str(e.get("user_id")) for e in introduced.values()})
    except ProvisionError:
        return {}
    return {
        path: Author(
            name=(e.get("user") or {}).get("name") if isinstance(e.get("user"), Mapping) else None,
            email=emails.get(str(e.get("user_id"))),
            at=e.get("created_at") if isinstance(e.get("created_at"), int) else None,
        )
        for path, e in introduced.items()
    }


def _emails(client: Any, user_ids: set[str]) -> dict[str, str]:
    found = {}
    for user_id in sorted(user_ids):
        user = client.get_user(user_id) or {}
        if isinstance(user.get("email"), str):
            found[user_id] = user["email"]
    return found


def when(at: int | None) -> str | None:
    """Epoch seconds as `2026-12-02 07:10 UTC`."""
    if at is None:
        return None
    return datetime.datetime.fromtimestamp(at, tz=datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def drift_entry(
    kind: Kind, ident: str, paths: Sequence[str], authors: Mapping[str, Author], *, history: bool
) -> dict[str, Any]:
    """One object's drift as the plan and the drift report carry it; `history`: whether the
    release keeps one (else no field can have a name)."""
    return {
        "kind": kind,
        "id": ident,
        "history": history,
        "fields": [{"path": p, "changed_by": authors[p].to_json() if p in authors else None} for p in paths],
    }


def drift_report(entries: Sequence[Mapping[str, Any]], untracked: Sequence[tuple[Kind, str]]) -> dict[str, Any]:
    """`provision drift -o json`: what changed in Open WebUI, versioned like the plan."""
    return {
        "format_version": FORMAT_VERSION,
        "drift": [dict(e) for e in entries],
        "untracked": [{"kind": k, "id": i} for k, i in untracked],
    }


def plan_drift(plan: Any, client: Any, observed: InstanceState) -> list[dict[str, Any]]:
    """The plan's fields changed in Open WebUI (alone or as well as in the blueprint), traced."""
    entries = []
    for change in plan.changes:
        paths = [f.path for f in change.fields if f.origin in ("openwebui", "both")]
        if paths:
            current = {f.path: f.before for f in change.fields}
            live = observed.of_kind(change.kind).get(change.id)
            head = (live.raw or {}).get("version_id") if live is not None else None
            authors = trace(client, change.kind, change.id, paths, current, head)
            entries.append(drift_entry(change.kind, change.id, paths, authors, history=client.compat.history))
    return entries


def instance_drift(observed: InstanceState, client: Any) -> dict[str, Any]:
    """`provision drift`: every managed object's fields changed since the last sync, traced."""
    drifted, untracked = find_drift(observed)
    entries = []
    for item in drifted:
        live = observed.of_kind(item.kind)[item.id]
        authors = trace(client, item.kind, item.id, item.paths, live.fields, (live.raw or {}).get("version_id"))
        entries.append(drift_entry(item.kind, item.id, item.paths, authors, history=client.compat.history))
    return drift_report(entries, untracked)
