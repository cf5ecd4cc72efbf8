"""Agents kept without `--prune` keep working: their pipe entries are carried over. Pure.

When a blueprint (or one agent of it) is deleted and `sync` runs without `--prune`, its model row
stays on the instance (an orphan). Users still see and pick it, so the pipe must still serve it:
the desired `AGENTS` valve gets the agent's entry from the instance's current valve (its last
known backend, as the last sync wrote it), and `API_KEYS` keeps that entry's key. Only
`--prune`, which deletes the row, also drops the entry. An orphan the current valve has no entry
for cannot be served; the plan says so on its line.

Layer: core.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from .contract import PIPE_FUNCTION_ID, agent_of_model
from .desired import PIPE_AGENTS_VALVE, PIPE_SECRET_VALVE
from .state import InstanceState


def keep_orphan_agents(
    desired: InstanceState, observed: InstanceState, *, prune: bool
) -> tuple[InstanceState, dict[str, str]]:
    """`desired` with kept agents' entries added to the pipe's valves, and one note per kept row.

    The notes (model id -> text) say, for every managed row the blueprints no longer define,
    whether the pipe keeps serving it and from where. With `prune` nothing is kept: no notes.
    """
    pipe = desired.functions.get(PIPE_FUNCTION_ID)
    orphans = [
        ident
        for ident, live in observed.models.items()
        if live.managed and ident not in desired.models and agent_of_model(ident)
    ]
    if prune or pipe is None or not orphans:
        return desired, {}
    live_pipe = observed.functions.get(PIPE_FUNCTION_ID)
    live_entries = agent_entries(live_pipe.fields.get(PIPE_AGENTS_VALVE) if live_pipe else None)
    live_keys = _mapping(live_pipe.fields.get(PIPE_SECRET_VALVE) if live_pipe else None)
    desired_entries = agent_entries(pipe.fields.get(PIPE_AGENTS_VALVE))
    keys = _mapping(pipe.fields.get(PIPE_SECRET_VALVE))
    notes: dict[str, str] = {}
    kept: list[dict[str, Any]] = []
    position = {sub_id: index for index, sub_id in enumerate(live_entries)}
    for ident in sorted(orphans):
        sub_id = agent_of_model(ident) or ident
        entry = live_entries.get(sub_id)
        if sub_id in desired_entries:
            continue
        if entry is None:
            notes[ident] = "kept, but the pipe has no backend for it: its chats fail until --prune removes it"
            continue
        kept.append(entry)
        key_name = entry.get("api_key")
        synced_key = entry.get("key_from", "sync") == "sync"  # "server": Open WebUI's environment holds it
        if synced_key and isinstance(key_name, str) and key_name and key_name not in keys and key_name in live_keys:
            keys[key_name] = live_keys[key_name]
        notes[ident] = (
            f"kept and still served by the pipe from {entry.get('url') or '(no url)'} (its last backend) until --prune"
        )
    if not kept:
        return desired, notes
    # The live valve's order (new entries after), so a sync that only keeps agents writes nothing.
    merged = sorted([*desired_entries.values(), *kept], key=lambda e: position.get(str(e["id"]), len(position)))
    fields = {
        **pipe.fields,
        PIPE_AGENTS_VALVE: json.dumps(merged, ensure_ascii=False, separators=(",", ":")),
        PIPE_SECRET_VALVE: json.dumps(keys, sort_keys=True, separators=(",", ":")),
    }
    functions = {**desired.functions, PIPE_FUNCTION_ID: replace(pipe, fields=fields)}
    return replace(desired, functions=functions), notes


def agent_entries(raw: Any) -> dict[str, dict[str, Any]]:
    """The AGENTS valve's entries by id; nothing for a valve that is absent or not valid JSON."""
    try:
        data = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return {}
    if not isinstance(data, list):
        return {}
    return {str(e["id"]): e for e in data if isinstance(e, dict) and isinstance(e.get("id"), str)}


def _mapping(raw: Any) -> dict[str, Any]:
    try:
        data = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return {}
    return dict(data) if isinstance(data, Mapping) else {}
