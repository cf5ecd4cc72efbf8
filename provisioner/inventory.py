"""What provision manages on an instance, as table rows: the `provision list` view. Pure.

Layer: output.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from .contract import AGENTS_VALVE, MARKER_KEY, TOGGLE_FILTER_PREFIX, agent_key, agent_of_model
from .orphans import agent_entries
from .state import is_managed


def managed_agents(
    models: Iterable[Mapping[str, Any]], groups: Mapping[str, str], served: Collection[str] | None = None
) -> list[dict[str, Any]]:
    """One entry per managed model row: id, name, features, default toggles, access, and whether
    the pipe serves it (`served`: the ids in its AGENTS valve; None when unknown)."""
    entries = []
    for row in models:
        meta = row.get("meta") or {}
        if not is_managed(meta):
            continue
        marker = meta[MARKER_KEY]
        entries.append(
            {
                "id": row.get("id"),
                "agent": agent_key(str(marker.get("blueprint")), str(marker.get("agent"))),
                "name": row.get("name"),
                "features": list(marker.get("features") or []),
                "defaults": [
                    *(meta.get("defaultFeatureIds") or []),
                    *(str(f).removeprefix(TOGGLE_FILTER_PREFIX) for f in meta.get("defaultFilterIds") or []),
                ],
                "access": describe_access(row.get("access_grants") or [], groups),
                "active": bool(row.get("is_active", True)),
                "served": None if served is None else agent_of_model(str(row.get("id"))) in served,
            }
        )
    return sorted(entries, key=lambda e: str(e["id"]))


def managed_functions(functions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return sorted(
        (
            {
                "id": f.get("id"),
                "type": f.get("type"),
                "active": bool(f.get("is_active")),
                "global": bool(f.get("is_global")),
            }
            for f in functions
            if is_managed(f.get("meta"))
        ),
        key=lambda e: str(e["id"]),
    )


def describe_access(grants: Iterable[Mapping[str, Any]], groups: Mapping[str, str]) -> str:
    """'public', 'private' or 'groups: A, B' (group ids shown by name where known)."""
    names = []
    for grant in grants:
        if grant.get("principal_type") == "user" and grant.get("principal_id") == "*":
            return "public"
        if grant.get("principal_type") == "group":
            gid = str(grant.get("principal_id"))
            names.append(groups.get(gid, gid))
    return f"groups: {', '.join(sorted(names))}" if names else "private"


def served_agent_ids(functions: Iterable[Mapping[str, Any]], pipe_id: str) -> set[str] | None:
    """The agent ids (`<blueprint>.<agent>`) the pipe's AGENTS valve lists; None without the pipe."""
    pipe = next((f for f in functions if f.get("id") == pipe_id), None)
    if pipe is None:
        return None
    return set(agent_entries((pipe.get("valves") or {}).get(AGENTS_VALVE)))
