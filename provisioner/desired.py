"""Catalog + function files (+ the instance's groups) -> the state Open WebUI should have. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .blueprints import GroupAccess
from .capabilities import model_capabilities
from .errors import BlueprintError, Problem
from .features import is_native
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
) -> InstanceState:
    """The desired instance. `groups` maps group name -> id; None means offline (not resolved).

    Raises BlueprintError naming the file, line and field of every group that does not exist.
    """
    problems: list[Problem] = []
    models: dict[str, ObjectState] = {}
    for lb in catalog.blueprints:
        for index, _agent in enumerate(lb.blueprint.agents):
            row = _model_row(lb, index, groups, problems)
            models[row.id] = row
    if problems:
        raise BlueprintError(problems)
    return InstanceState(
        functions={f.id: function_state(f) for f in functions},
        models=dict(sorted(models.items())),
    )


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


def _model_row(
    lb: LoadedBlueprint, index: int, groups: Mapping[str, str] | None, problems: list[Problem]
) -> ObjectState:
    bp = lb.blueprint
    agent = bp.agents[index]
    supported = sorted(lb.supported_features)
    custom = [f for f in supported if not is_native(f)]
    fields: dict[str, Any] = {
        "name": agent.name,
        "base_model_id": None,
        "is_active": True,
        "meta.description": agent.description or bp.description,
        **{
            f"meta.capabilities.{key}": value
            for key, value in model_capabilities(supported, bp.openwebui_capabilities).items()
        },
        "meta.filterIds": [FEATURE_FILTER_ID, *(toggle_filter_id(f) for f in custom)],
        "meta.defaultFeatureIds": [f for f in agent.defaults if is_native(f)],
        "meta.defaultFilterIds": [toggle_filter_id(f) for f in agent.defaults if not is_native(f)],
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
    return ObjectState(kind="model", id=model_id(bp.id, agent.id), fields=fields)


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
