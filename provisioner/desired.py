"""Catalog + function files (+ the instance's groups) -> the state Open WebUI should have. Pure.

Layer: core.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from .attachments import attached
from .blueprints import Agent, Blueprint, GroupAccess, Suggestion, agent_backend
from .contract import (  # noqa: F401  (ids re-exported: callers import them from here)
    AGENTS_VALVE,
    API_KEYS_VALVE,
    FEATURE_FILTER_ID,
    IDENTITY_VALVE,
    PIPE_FUNCTION_ID,
    SIGNING_VALVE,
    agent_key,
    model_id,
    valve_path,
)
from .errors import BlueprintError, Problem
from .function_files import FunctionFile
from .grants import PUBLIC_GRANT, normalize_grants
from .loader import Catalog, LoadedBlueprint
from .owui_capabilities import model_capabilities
from .state import BUNDLE_PREFIX, I18N_KEY, MANAGED_BY, MARKER_KEY, InstanceState, ObjectState
from .toggle_filters import toggle_filter_id
from .urls import plain_http_host
from .version import __version__


def build_desired(
    catalog: Catalog,
    functions: Sequence[FunctionFile],
    groups: Mapping[str, str] | None,
    env: Mapping[str, str] | None = None,
    token: str | None = None,
    token_variables: Collection[str] = (),
    signing_key: str | None = None,
    priority_in_valves: bool = False,
    skip_missing_groups: bool = False,
    identity_keys: str | None = None,
    translations: Mapping[str, Mapping[str, Mapping[str, str]]] | None = None,
    i18n: bool = True,
) -> InstanceState:
    """The desired instance.

    `groups` maps group name -> id and `env` holds the backends' API keys; None for either means
    offline (`validate`): groups and secrets are not resolved. `token` is the admin token in use
    and `token_variables` the variables a target reads it from: no backend key may be either.
    `signing_key` is the pipe's HISTORY_SIGNING_KEY (the live one, or a fresh one when the
    instance has none: see `history_signing_key`); None leaves that valve out, and so does it
    `identity_keys` (the IDENTITY_KEYS valve: identity_keys.next_identity_keys). `priority_in_valves`:
    the release reads a filter's priority only from its valves (compat.py). `i18n`: the release
    shows `meta.i18n` (0.12+), so agent rows and the functions in `translations` (function id ->
    locale -> name and description: toggle_filters.toggle_translations) carry their translations. Raises BlueprintError naming the
    file, line and field of every group or API-key variable that does not exist, and of every
    key variable holding the token; with `skip_missing_groups`, a grant to a group that does not
    exist is left out instead (groups.py).
    """
    problems: list[Problem] = []
    models: dict[str, ObjectState] = {}
    for lb in catalog.blueprints:
        for index, _agent in enumerate(lb.blueprint.agents):
            row = _model_row(lb, index, groups, problems, skip_missing_groups, i18n)
            models[row.id] = row
    pipe_valves = _pipe_valves(catalog, env, token, frozenset(token_variables), problems)
    if signing_key:
        pipe_valves[PIPE_SIGNING_VALVE] = signing_key
    if identity_keys:
        pipe_valves[PIPE_IDENTITY_VALVE] = identity_keys
    if problems:
        raise BlueprintError(problems)
    translated = translations if i18n else None
    states = {
        f.id: function_state(f, priority_in_valves, translated.get(f.id) if translated is not None else None)
        for f in functions
    }
    pipe = states.get(PIPE_FUNCTION_ID)
    if pipe is not None:
        states[PIPE_FUNCTION_ID] = ObjectState(
            kind="function",
            id=pipe.id,
            fields={**pipe.fields, **pipe_valves},
            sensitive=frozenset({PIPE_SECRET_VALVE, PIPE_SIGNING_VALVE, PIPE_IDENTITY_VALVE}),
            written_by=pipe.written_by,
            source=pipe.source,
            owned_maps=pipe.owned_maps,
        )
    return InstanceState(functions=states, models=dict(sorted(models.items())))


def function_state(
    f: FunctionFile, priority_in_valves: bool = False, translations: Mapping[str, Mapping[str, str]] | None = None
) -> ObjectState:
    """`priority_in_valves`: the release reads a filter's priority only from stored valves.
    `translations` (locale -> name, description): the function's meta.i18n, owned whole; None
    leaves the row's as it is."""
    fields: dict[str, Any] = {
        "name": f.name,
        "meta.description": f.description,
        "content": f.content,
        "is_active": True,
        "is_global": f.is_global,
        f"meta.{MARKER_KEY}": {"managed_by": MANAGED_BY},
    }
    if priority_in_valves and f.priority is not None:
        fields["valves.priority"] = f.priority
    owned: frozenset[str] = frozenset()
    if translations is not None:
        fields.update(i18n_leaves(translations))
        owned = frozenset({I18N_KEY})
    return ObjectState(
        kind="function", id=f.id, fields=fields, written_by=__version__, source=function_source(f), owned_maps=owned
    )


def i18n_leaves(table: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """locale -> {key: value} as flat fields `meta.i18n.<locale>.<key>`: a plan shows each one
    that changes on its own line (a locale tag holds no dot: locales.py)."""
    return {
        f"{I18N_KEY}.{locale}.{key}": value for locale, entry in sorted(table.items()) for key, value in entry.items()
    }


def agent_translations(bp: Blueprint, agent: Agent) -> dict[str, dict[str, Any]] | None:
    """The agent row's meta.i18n: per locale, the agent's own name, description and suggestions,
    and the blueprint's translations of the description and suggestions the agent takes from it
    (a translation goes with the text it translates). None: neither says `i18n`, and the row's
    translations stay as an admin left them."""
    if bp.i18n is None and agent.i18n is None:
        return None
    own = agent.i18n or {}
    inherited = bp.i18n or {}
    table: dict[str, dict[str, Any]] = {}
    for locale in sorted({*own, *inherited}):
        mine, theirs = own.get(locale), inherited.get(locale)
        entry: dict[str, Any] = {}
        if mine and mine.name:
            entry["name"] = mine.name
        description = mine.description if mine and mine.description else None
        if description is None and theirs and theirs.description and not agent.description:
            description = theirs.description
        if description:
            entry["description"] = description
        suggestions = mine.suggestions if mine and mine.suggestions is not None else None
        if suggestions is None and theirs and theirs.suggestions is not None and agent.suggestions is None:
            suggestions = theirs.suggestions
        if suggestions is not None:
            entry["suggestion_prompts"] = [suggestion_prompt(s) for s in suggestions]
        if entry:
            table[locale] = entry
    return table


def function_source(f: FunctionFile) -> str:
    """Where a function comes from, as a reader of Open WebUI's history knows it: the bundle's
    files by name (their path is inside the installed package), the team's own by path."""
    if f.id.startswith(BUNDLE_PREFIX):
        return f"the provision bundle's {Path(f.path).name}"
    return f.path


# The agent pipe's valves that sync writes, as field paths (the names are the contract's).
PIPE_AGENTS_VALVE = valve_path(AGENTS_VALVE)
PIPE_SECRET_VALVE = valve_path(API_KEYS_VALVE)
# Signs the tool blocks the pipe renders, so an edited chat cannot forge a tool call next turn.
PIPE_SIGNING_VALVE = valve_path(SIGNING_VALVE)
SIGNING_KEY_MIN_LENGTH = 32
# The private key the pipe signs who is asking with (identity_keys.py says how it is kept).
PIPE_IDENTITY_VALVE = valve_path(IDENTITY_VALVE)


def history_signing_key(observed: InstanceState, fresh: str) -> str:
    """The live pipe's signing key when it has a usable one (a normal sync never rotates it, or
    every signed tool block in every chat would stop counting), else `fresh`."""
    pipe = observed.functions.get(PIPE_FUNCTION_ID)
    live = pipe.fields.get(PIPE_SIGNING_VALVE) if pipe is not None else None
    return live if isinstance(live, str) and len(live) >= SIGNING_KEY_MIN_LENGTH else fresh


def agent_backends(lb: LoadedBlueprint) -> list[dict[str, Any]]:
    """The AGENTS valve entries of one blueprint: where each agent runs and what it supports.

    An entry with a key names it (`api_key`) and says who reads it (`key_from`: `sync` wrote it
    into API_KEYS, or the Open WebUI `server` reads it from its own environment at chat time);
    `insecure: true` appears only on a backend that allowed plain http off loopback. `reads` is
    what the agent takes from the chat, `identity` what the pipe tells it about the user, and
    `oauth_token_header` the header the user's OAuth token goes in (None: it never goes).
    """
    bp = lb.blueprint
    entries = []
    for agent in bp.agents:
        backend = agent_backend(bp.backend, agent.backend)
        entry: dict[str, Any] = {
            "id": agent_key(bp.id, agent.id),
            "name": agent.name,
            "transport": backend["transport"],
            "url": backend["url"],
            "model": backend["model"] or (f"{bp.id}.{agent.id}" if backend["transport"] == "openai" else None),
            "api_key": backend["api_key_env"],
        }
        if backend["api_key_env"]:
            entry["key_from"] = backend["api_key_from"]
        if backend["insecure"]:
            entry["insecure"] = True
        entry["features"] = sorted(lb.supported_features)
        entry["reads"] = sorted(lb.reads)
        entry["identity"] = backend["identity"]
        entry["oauth_token_header"] = backend["oauth_token_header"]
        entries.append(entry)
    return entries


def insecure_backends(catalog: Catalog) -> list[tuple[str, str]]:
    """(agent, host) for every agent whose backend is plain http off loopback (`insecure: true`)."""
    found = []
    for lb in catalog.blueprints:
        for agent in lb.blueprint.agents:
            backend = agent_backend(lb.blueprint.backend, agent.backend)
            host = plain_http_host(backend["url"] or "")
            if host and backend["insecure"]:
                found.append((f"{lb.blueprint.id}.{agent.id}", host))
    return found


def _key_path(lb: LoadedBlueprint, index: int) -> tuple[str | int, ...]:
    """Where the agent's key variable is named: its own backend override, or the blueprint's."""
    override = lb.blueprint.agents[index].backend
    if override and override.api_key_env:
        return ("agents", index, "backend", "api_key_env")
    return ("backend", "api_key_env")


def _pipe_valves(
    catalog: Catalog,
    env: Mapping[str, str] | None,
    token: str | None,
    token_variables: frozenset[str],
    problems: list[Problem],
) -> dict[str, str]:
    agents: list[dict[str, Any]] = []
    keys: dict[str, str] = {}
    checked: set[tuple[str, str]] = set()
    for lb in catalog.blueprints:
        for index, entry in enumerate(agent_backends(lb)):
            agents.append(entry)  # every entry has a url: the loader checks that
            name = entry["api_key"]
            if name in token_variables:
                problems.append(
                    lb.source.problem(
                        _key_path(lb, index),
                        f"{name} holds an Open WebUI admin token (a target's token_env); a backend must "
                        "never receive it: give the backend a key of its own in another variable",
                    )
                )
                continue
            if not name or env is None or (name, entry["key_from"]) in checked:
                continue
            checked.add((name, entry["key_from"]))
            value = env.get(name, "")
            if token and value and token.strip() in value:
                problems.append(
                    lb.source.problem(
                        _key_path(lb, index),
                        f"environment variable {name} holds the Open WebUI admin token in use; a backend "
                        "must never receive it: give the backend a key of its own",
                    )
                )
                continue
            if entry["key_from"] == "server":
                continue  # the Open WebUI server reads it at chat time; sync needs no value
            if value:
                keys[name] = value
                continue
            problems.append(
                lb.source.problem(
                    _key_path(lb, index), f"environment variable {name} is not set (it holds this backend's API key)"
                )
            )
    return {
        PIPE_AGENTS_VALVE: json.dumps(agents, ensure_ascii=False, separators=(",", ":")),
        PIPE_SECRET_VALVE: json.dumps(keys, sort_keys=True, separators=(",", ":")),
    }


def _model_row(
    lb: LoadedBlueprint,
    index: int,
    groups: Mapping[str, str] | None,
    problems: list[Problem],
    skip_missing: bool = False,
    i18n: bool = True,
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
            for key, value in model_capabilities(supported, bp.openwebui_capabilities, lb.reads).items()
        },
        # Every supported feature, native or custom, is one of the bundle's toggle filters, so it
        # shows whatever Open WebUI's instance-wide switches say (docs/features.md, "How features work").
        "meta.filterIds": [
            FEATURE_FILTER_ID,
            *(toggle_filter_id(f) for f in supported),
            *attached(bp, agent, "filters"),  # the user's own run after ours
        ],
        "meta.actionIds": attached(bp, agent, "actions"),
        "meta.defaultFeatureIds": [],
        "meta.defaultFilterIds": [toggle_filter_id(f) for f in agent.defaults],
        f"meta.{MARKER_KEY}": {
            "managed_by": MANAGED_BY,
            "blueprint": bp.id,
            "agent": agent.id,
            "features": supported,
        },
        "access_grants": _grants(lb, index, groups, problems, skip_missing),
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
    translations = agent_translations(bp, agent) if i18n else None
    if translations is not None:
        fields.update(i18n_leaves(translations))
    return ObjectState(
        kind="model",
        id=model_id(bp.id, agent.id),
        fields=fields,
        written_by=__version__,
        source=lb.source.path,
        owned_maps=frozenset({I18N_KEY}) if translations is not None else frozenset(),
    )


def suggestion_prompt(suggestion: Suggestion) -> dict[str, Any]:
    """A suggestion as Open WebUI's chat placeholder reads it: two title lines and the prompt."""
    return {"title": [suggestion.title, suggestion.subtitle], "content": suggestion.prompt}


def _grants(
    lb: LoadedBlueprint,
    index: int,
    groups: Mapping[str, str] | None,
    problems: list[Problem],
    skip_missing: bool = False,
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
        elif skip_missing:
            continue
        else:
            known = ", ".join(sorted(groups)) or "none"
            problems.append(
                lb.source.problem(
                    ("agents", index, "access", "groups", g),
                    f"no group named {name!r} in Open WebUI (groups there: {known}); a target's "
                    "`missing_groups: skip` or `create` lets sync go ahead without it",
                )
            )
            continue
        grants.append({"principal_type": "group", "principal_id": group_id, "permission": "read"})
    return normalize_grants(grants)
