"""Catalog + function files (+ the instance's groups) -> the state Open WebUI should have. Pure."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .blueprints import GroupAccess, Suggestion
from .capabilities import model_capabilities
from .errors import BlueprintError, Problem
from .function_files import FunctionFile
from .loader import Catalog, LoadedBlueprint
from .state import MANAGED_BY, MARKER_KEY, InstanceState, ObjectState
from .toggle_filters import toggle_filter_id

PIPE_FUNCTION_ID = "aihub_agent_pipe"
FEATURE_FILTER_ID = "aihub_feature_filter"

PUBLIC_GRANT = {"principal_type": "user", "principal_id": "*", "permission": "read"}


def model_id(blueprint_id: str, agent_id: str) -> str:
    """The id of the pipe's sub-model that serves this agent."""
    return f"{PIPE_FUNCTION_ID}.{blueprint_id}.{agent_id}"


def build_desired(
    catalog: Catalog,
    functions: Sequence[FunctionFile],
    groups: Mapping[str, str] | None,
    env: Mapping[str, str] | None = None,
    signing_key: str | None = None,
) -> InstanceState:
    """The desired instance.

    `groups` maps group name -> id and `env` holds the backends' API keys; None for either means
    offline (`validate`): groups and secrets are not resolved. `signing_key` is the pipe's
    HISTORY_SIGNING_KEY (the live one, or a fresh one when the instance has none: see
    `history_signing_key`); None leaves that valve out. Raises BlueprintError naming the
    file, line and field of every group or API-key variable that does not exist.
    """
    problems: list[Problem] = []
    models: dict[str, ObjectState] = {}
    for lb in catalog.blueprints:
        for index, _agent in enumerate(lb.blueprint.agents):
            row = _model_row(lb, index, groups, problems)
            models[row.id] = row
    pipe_valves = _pipe_valves(catalog, env, problems)
    if signing_key:
        pipe_valves[PIPE_SIGNING_VALVE] = signing_key
    if problems:
        raise BlueprintError(problems)
    states = {f.id: function_state(f) for f in functions}
    pipe = states.get(PIPE_FUNCTION_ID)
    if pipe is not None:
        states[PIPE_FUNCTION_ID] = ObjectState(
            kind="function",
            id=pipe.id,
            fields={**pipe.fields, **pipe_valves},
            sensitive=frozenset({PIPE_SECRET_VALVE, PIPE_SIGNING_VALVE}),
        )
    return InstanceState(functions=states, models=dict(sorted(models.items())))


def function_state(f: FunctionFile) -> ObjectState:
    return ObjectState(
        kind="function",
        id=f.id,
        fields={
            "name": f.name,
            "meta.description": f.description,
            "content": f.content,
            "is_active": True,
            "is_global": f.is_global,
            f"meta.{MARKER_KEY}": {"managed_by": MANAGED_BY},
        },
    )


# The agent pipe's valves that sync writes (the pipe's Valves class declares the same names).
PIPE_AGENTS_VALVE = "valves.AGENTS"
PIPE_SECRET_VALVE = "valves.API_KEYS"
# Signs the tool blocks the pipe renders, so an edited chat cannot forge a tool call next turn.
PIPE_SIGNING_VALVE = "valves.HISTORY_SIGNING_KEY"
SIGNING_KEY_MIN_LENGTH = 32


def history_signing_key(observed: InstanceState, fresh: str) -> str:
    """The live pipe's signing key when it has a usable one (a normal sync never rotates it, or
    every signed tool block in every chat would stop counting), else `fresh`."""
    pipe = observed.functions.get(PIPE_FUNCTION_ID)
    live = pipe.fields.get(PIPE_SIGNING_VALVE) if pipe is not None else None
    return live if isinstance(live, str) and len(live) >= SIGNING_KEY_MIN_LENGTH else fresh


def agent_backends(lb: LoadedBlueprint) -> list[dict[str, Any]]:
    """The AGENTS valve entries of one blueprint: where each agent runs and what it supports."""
    bp = lb.blueprint
    entries = []
    for agent in bp.agents:
        base = bp.backend.model_dump() if bp.backend else {}
        override = agent.backend.model_dump(exclude_none=True) if agent.backend else {}
        backend = {"transport": "agui", "url": None, "model": None, "api_key_env": None, **base, **override}
        entries.append(
            {
                "id": f"{bp.id}.{agent.id}",
                "name": agent.name,
                "transport": backend["transport"],
                "url": backend["url"],
                "model": backend["model"] or (f"{bp.id}.{agent.id}" if backend["transport"] == "openai" else None),
                "api_key": backend["api_key_env"],
                "features": sorted(lb.supported_features),
            }
        )
    return entries


def _pipe_valves(catalog: Catalog, env: Mapping[str, str] | None, problems: list[Problem]) -> dict[str, str]:
    agents: list[dict[str, Any]] = []
    keys: dict[str, str] = {}
    for lb in catalog.blueprints:
        for index, entry in enumerate(agent_backends(lb)):
            agents.append(entry)  # every entry has a url: the loader checks that
            name = entry["api_key"]
            if not name or env is None or name in keys:
                continue
            if env.get(name):
                keys[name] = env[name]
                continue
            override = lb.blueprint.agents[index].backend
            path = (
                ("agents", index, "backend", "api_key_env")
                if override and override.api_key_env
                else ("backend", "api_key_env")
            )
            problems.append(
                lb.source.problem(path, f"environment variable {name} is not set (it holds this backend's API key)")
            )
    return {
        PIPE_AGENTS_VALVE: json.dumps(agents, ensure_ascii=False, separators=(",", ":")),
        PIPE_SECRET_VALVE: json.dumps(keys, sort_keys=True, separators=(",", ":")),
    }


def _model_row(
    lb: LoadedBlueprint, index: int, groups: Mapping[str, str] | None, problems: list[Problem]
) -> ObjectState:
    bp = lb.blueprint
    agent = bp.agents[index]
    supported = sorted(lb.supported_features)
    fields: dict[str, Any] = {
        "name": agent.name,
        "base_model_id": None,
        "is_active": True,
        "meta.description": agent.description or bp.description,
        **{
            f"meta.capabilities.{key}": value
            for key, value in model_capabilities(supported, bp.openwebui_capabilities).items()
        },
        # Every supported feature, native or custom, is one of the bundle's toggle filters, so it
        # shows whatever Open WebUI's instance-wide switches say (README "How features work").
        "meta.filterIds": [FEATURE_FILTER_ID, *(toggle_filter_id(f) for f in supported)],
        "meta.defaultFeatureIds": [],
        "meta.defaultFilterIds": [toggle_filter_id(f) for f in agent.defaults],
        f"meta.{MARKER_KEY}": {
            "managed_by": MANAGED_BY,
            "blueprint": bp.id,
            "agent": agent.id,
            "features": supported,
        },
        "access_grants": _grants(lb, index, groups, problems),
    }
    icon = lb.agent_icons.get(agent.id)
    if icon:
        fields["meta.profile_image_url"] = icon
    suggestions = agent.suggestions if agent.suggestions is not None else bp.suggestions
    if suggestions is not None:  # unset: the row keeps what an admin chose
        fields["meta.suggestion_prompts"] = [suggestion_prompt(s) for s in suggestions]
    if bp.tags is not None or agent.tags is not None:
        names = [*(bp.tags or []), *(agent.tags or [])]
        fields["meta.tags"] = [{"name": name} for name in dict.fromkeys(names)]
    return ObjectState(kind="model", id=model_id(bp.id, agent.id), fields=fields)


def suggestion_prompt(suggestion: Suggestion) -> dict[str, Any]:
    """A suggestion as Open WebUI's chat placeholder reads it: two title lines and the prompt."""
    return {"title": [suggestion.title, suggestion.subtitle], "content": suggestion.prompt}


def _grants(
    lb: LoadedBlueprint, index: int, groups: Mapping[str, str] | None, problems: list[Problem]
) -> list[dict[str, str]]:
    access = lb.blueprint.agents[index].access
    if access == "public":
        return [dict(PUBLIC_GRANT)]
    if not isinstance(access, GroupAccess):
        return []
    grants: list[dict[str, str]] = []
    for g, name in enumerate(access.groups):
        if groups is None:
            group_id = f"<group {name}>"
        elif name in groups:
            group_id = groups[name]
        else:
            known = ", ".join(sorted(groups)) or "none"
            problems.append(
                lb.source.problem(
                    ("agents", index, "access", "groups", g),
                    f"no group named {name!r} in Open WebUI (groups there: {known})",
                )
            )
            continue
        grants.append({"principal_type": "group", "principal_id": group_id, "permission": "read"})
    return normalize_grants(grants)


def normalize_grants(grants: Any) -> list[dict[str, str]]:
    """Grants as a sorted list of {principal_type, principal_id, permission}, nothing else."""
    if not isinstance(grants, list):
        return []
    keys = ("principal_type", "principal_id", "permission")
    clean = [
        {k: str(g.get(k, "")) for k in keys} for g in grants if isinstance(g, Mapping)
    ]
    unique = {tuple(g[k] for k in keys): g for g in clean}
    return [unique[key] for key in sorted(unique)]
