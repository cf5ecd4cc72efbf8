"""Why an agent shows the toggles it shows, and what its model row will say. Pure.

`provision explain AGENT` answers the question a platform team gets most ("why don't I see the
web search toggle on this agent?") from the blueprints alone: for each toggle the capability
that serves it and every step that calls that capability, with file and line; for each feature
of the catalog the agent does not show, why not; and the row's capabilities, filters, defaults
and access, each value with where it comes from. `instance_notes` adds what an instance changes
on top (a toggle function switched off or global, a group without the upload permission, a
workspace model wrapping the agent), from listings the caller read.

Layer: core.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .blueprints import GroupAccess
from .contract import FEATURE_FILTER_ID, PIPE_FUNCTION_ID, agent_key, agent_of_model, model_id
from .desired import agent_backends, build_desired
from .doctor import Facts, functions_off
from .errors import ConfigError
from .features import NATIVE_FEATURES, NATIVE_TOGGLES
from .groups import file_upload, group_has_members, groups_below_that_may_upload, members_may_upload
from .loader import CAPABILITIES_FILE, Catalog, LoadedBlueprint
from .owui_capabilities import ALWAYS_OFF, CAPABILITY_KEYS, OVERRIDABLE_DEFAULTS, READS_CAPABILITIES
from .schema_problems import suggest
from .toggle_filters import toggle_filter_id


@dataclass(frozen=True)
class Located:
    """A blueprint agent found by the name a user typed."""

    loaded: LoadedBlueprint
    index: int

    @property
    def key(self) -> str:
        return agent_key(self.loaded.blueprint.id, self.loaded.blueprint.agents[self.index].id)


def find_agent(catalog: Catalog, name: str) -> Located:
    """The agent `name` names: `<blueprint>.<agent>`, its model id, an agent id that only one
    blueprint has, or a blueprint id with one agent. ConfigError lists the agents otherwise."""
    wanted = agent_of_model(name.strip()) or name.strip()
    every = [Located(lb, i) for lb in catalog.blueprints for i in range(len(lb.blueprint.agents))]
    exact = [a for a in every if a.key == wanted]
    if not exact:
        exact = [a for a in every if a.loaded.blueprint.agents[a.index].id == wanted]
    if not exact:
        exact = [a for a in every if a.loaded.blueprint.id == wanted]
    if len(exact) == 1:
        return exact[0]
    keys = [a.key for a in every]
    if exact:
        raise ConfigError(
            f"{name!r} names {len(exact)} agents ({', '.join(a.key for a in exact)}); name one as <blueprint>.<agent>"
        )
    raise ConfigError(
        f"no agent {name!r} in the blueprints{suggest(wanted, keys)}; agents: {', '.join(keys) or 'none'}"
    )


def explain_agent(catalog: Catalog, name: str) -> dict[str, Any]:
    """The explanation of one agent as plain data (the `-o json` form; render_explain shows it)."""
    found = find_agent(catalog, name)
    lb, agent = found.loaded, found.loaded.blueprint.agents[found.index]
    bp = lb.blueprint
    row = build_desired(catalog, (), groups=None).models[model_id(bp.id, agent.id)].fields
    calls = _calls(lb)
    toggles = []
    for feature in sorted(lb.supported_features):
        sources = [
            {"capability": cap, "at": _capability_at(catalog, cap), "steps": calls[cap]}
            for cap in sorted(calls)
            if catalog.capabilities[cap].serves == feature
        ]
        toggles.append(
            {
                "feature": feature,
                "title": _title(catalog, feature),
                "native": feature in NATIVE_FEATURES,
                "filter": toggle_filter_id(feature),
                "on_by_default": feature in agent.defaults,
                "served_by": sources,
            }
        )
    not_shown = [
        {"feature": feature, "title": _title(catalog, feature), "why": _why_not(catalog, lb, feature)}
        for feature in sorted((NATIVE_FEATURES | set(catalog.features)) - lb.supported_features)
    ]
    capabilities = {key: row[f"meta.capabilities.{key}"] for key in CAPABILITY_KEYS}
    return {
        "agent": found.key,
        "name": agent.name,
        "model_id": model_id(bp.id, agent.id),
        "file": lb.source.path,
        "line": lb.source.line("agents", found.index),
        "toggles": toggles,
        "not_shown": not_shown,
        "row": {
            "meta.capabilities": capabilities,
            "why_capabilities": {key: _why_capability(catalog, lb, calls, key) for key in CAPABILITY_KEYS},
            "meta.filterIds": row["meta.filterIds"],
            "meta.actionIds": row["meta.actionIds"],
            "meta.defaultFilterIds": row["meta.defaultFilterIds"],
            "access": _access(agent.access),
            "public": agent.access == "public",
            "groups": list(agent.access.groups) if isinstance(agent.access, GroupAccess) else [],
            "reads": sorted(lb.reads),
        },
        "backend": _backend(lb, found),
    }


def _backend(lb: LoadedBlueprint, found: Located) -> dict[str, Any]:
    """Where the pipe sends the agent's chats (its AGENTS valve entry, key by name only), and the
    line that says so: the second question after the toggles is where a chat goes, with which key."""
    entry = next(e for e in agent_backends(lb) if e["id"] == found.key)
    override = lb.blueprint.agents[found.index].backend is not None
    line = lb.source.line("agents", found.index, "backend") if override else lb.source.line("backend")
    return {
        "transport": entry["transport"],
        "url": entry["url"],
        "model": entry["model"],
        "api_key_env": entry["api_key"],
        "api_key_from": entry.get("key_from"),
        "identity": entry["identity"],
        "oauth_token_header": entry["oauth_token_header"],
        "insecure": bool(entry.get("insecure")),
        "file": lb.source.path,
        "line": line,
    }


def _calls(lb: LoadedBlueprint) -> dict[str, list[dict[str, Any]]]:
    """capability -> every step that calls it, with the file and line of the call."""
    found: dict[str, list[dict[str, Any]]] = {}
    for s, step in enumerate(lb.blueprint.steps):
        for c, cap in enumerate(step.calls):
            found.setdefault(cap, []).append(
                {"step": step.id, "file": lb.source.path, "line": lb.source.line("steps", s, "calls", c)}
            )
    return found


def _capability_at(catalog: Catalog, capability: str) -> dict[str, Any]:
    source = catalog.capability_source
    if source is None:
        return {"file": str(catalog.root / CAPABILITIES_FILE), "line": None}
    return {"file": source.path, "line": source.line("capabilities", capability)}


def _title(catalog: Catalog, feature: str) -> str:
    if feature in NATIVE_TOGGLES:
        return NATIVE_TOGGLES[feature].title
    defined = catalog.features.get(feature)
    return defined.title if defined else feature


def _where(at: Mapping[str, Any]) -> str:
    return f"{at['file']}:{at['line']}" if at.get("line") else str(at["file"])


def _why_not(catalog: Catalog, lb: LoadedBlueprint, feature: str) -> str:
    serving = sorted(name for name, cap in catalog.capabilities.items() if cap.serves == feature)
    if not serving:
        return (
            f"no capability in {CAPABILITIES_FILE} serves {feature}: add `serves: {feature}` to the capability "
            "that does it, and call that capability from a step of this blueprint"
        )
    named = ", ".join(f"{cap} ({_where(_capability_at(catalog, cap))})" for cap in serving)
    return (
        f"{'it is' if len(serving) == 1 else 'they are'} served by {named}, but no step of blueprint "
        f"{lb.blueprint.id} ({lb.source.path}) calls {'it' if len(serving) == 1 else 'any of them'}: "
        "add it to a step's `calls`"
    )


def _why_capability(catalog: Catalog, lb: LoadedBlueprint, calls: Mapping[str, Any], key: str) -> str:
    overrides = lb.blueprint.openwebui_capabilities
    if key in ALWAYS_OFF:
        if key in NATIVE_FEATURES:
            return "always off on agent rows: a supported native feature shows as the bundle's toggle filter instead"
        return "always off on agent rows: it would make Open WebUI do the agent's work itself"
    if key in overrides:
        return f"openwebui_capabilities.{key} in {lb.source.path}:{lb.source.line('openwebui_capabilities', key)}"
    for read in sorted(lb.reads):
        if key in READS_CAPABILITIES[read]:
            readers = sorted(cap for cap in calls if read in catalog.capabilities[cap].reads)
            on = READS_CAPABILITIES[read][key]
            why = "" if on else ": the agent reads the file itself, Open WebUI runs no retrieval"
            return f"the agent reads {read} (capability {', '.join(readers) or '?'}){why}"
    if key in OVERRIDABLE_DEFAULTS:
        return "provision's default (a blueprint may set it under openwebui_capabilities)"
    return "provision's default"


def _access(access: Any) -> str:
    if access == "public":
        return "public: every user of the instance"
    if isinstance(access, GroupAccess):
        return f"the members of {', '.join(access.groups)} (and admins)"
    return "private: admins only"


# ------------------------------------------------------------------------------- online


def instance_notes(explained: Mapping[str, Any], facts: Facts) -> list[dict[str, str]]:
    """What the instance adds to the explanation: one note per finding, `{"about", "note"}` and
    the `fix` where there is something to do (a native feature Open WebUI switched off is news,
    not a fault),
    from what diagnose.read_facts read (rows, functions with their flags, groups with their
    permissions, the default user permissions, the document and web search settings)."""
    notes: list[dict[str, str]] = []
    rows = {str(m.get("id")): m for m in facts.models}
    by_id = {str(f.get("id")): f for f in facts.functions}
    if functions_off(facts.functions, facts.pipe_by_id):
        notes.append(
            {
                "about": "functions",
                "note": "functions are switched off (ENABLE_FUNCTIONS=false): no toggle shows and every chat fails",
                "fix": "set ENABLE_FUNCTIONS=true (and ENABLE_PLUGINS, if set) in Open WebUI's environment and restart it",
            }
        )
        return notes
    row = rows.get(str(explained["model_id"]))
    if row is None:
        notes.append(
            {
                "about": "row",
                "note": "the instance has no row for this agent yet: nobody sees it",
                "fix": "run `provision sync`",
            }
        )
    elif row.get("is_active") is False:
        notes.append(
            {
                "about": "row",
                "note": "the row is switched off on the instance: nobody sees the agent",
                "fix": "run `provision sync`, or switch it on in Admin Panel > Models",
            }
        )
    for fid in [PIPE_FUNCTION_ID, FEATURE_FILTER_ID, *(t["filter"] for t in explained["toggles"])]:
        fn = by_id.get(fid)
        if fn is None:
            notes.append(
                {
                    "about": fid,
                    "note": f"{fid} is not on the instance: {_inactive_effect(fid)}",
                    "fix": "run `provision sync`",
                }
            )
        elif not fn.get("is_active"):
            notes.append(
                {
                    "about": fid,
                    "note": f"{fid} is inactive: {_inactive_effect(fid)}",
                    "fix": "run `provision sync`, or switch it on in Admin Panel > Functions",
                }
            )
        elif fn.get("is_global"):
            notes.append(
                {
                    "about": fid,
                    "note": f"{fid} is global: it runs on every model of the instance, not only on agents",
                    "fix": "run `provision sync` (it sets the flag from the function file)",
                }
            )
    for toggle in explained["toggles"]:
        if toggle["native"] and facts.native_switches.get(toggle["feature"]) is False:
            notes.append(
                {
                    "about": toggle["feature"],
                    "note": f"Open WebUI's own {toggle['title']} is switched off on this instance; the agent's toggle is "
                    f"the bundle's {toggle['filter']} and shows anyway (the agent, not Open WebUI, does the work)",
                }
            )
    notes.extend(_group_notes(explained, facts.groups, facts.default_permissions))
    for wrapper in facts.models:
        if wrapper.get("base_model_id") == explained["model_id"]:
            notes.append(
                {
                    "about": str(wrapper.get("id")),
                    "note": f"workspace model {wrapper.get('id')!s} ({wrapper.get('name')!s}) wraps this agent: chats with it "
                    "run without the feature filter, so its users' toggles never reach the agent",
                    "fix": "point its users at the agent itself, or delete the wrapper",
                }
            )
    return sorted(notes, key=lambda n: "fix" not in n)  # what to act on first


def _inactive_effect(fid: str) -> str:
    if fid == PIPE_FUNCTION_ID:
        return "every chat with an agent fails"
    if fid == FEATURE_FILTER_ID:
        return "no requested feature reaches the agent and Open WebUI's own toggles are not stripped"
    return "its toggle does not show on any agent"


def _group_notes(
    explained: Mapping[str, Any], groups: Iterable[Mapping[str, Any]], default_permissions: Mapping[str, Any] | None
) -> list[dict[str, str]]:
    """Who gets the agent through its groups: a group missing or without members gives it to
    nobody but admins; and for an agent that reads files, users who may not upload (no group of
    theirs or above it grants chat.file_upload, nor the default) never see the attach button."""
    reads_files = bool(set(explained["row"]["reads"]) & {"documents", "images"})
    default = file_upload(default_permissions)
    groups = list(groups)
    by_name = {str(g.get("name")): g for g in groups}
    notes = []
    for name in explained["row"]["groups"]:
        group = by_name.get(name)
        if group is None:
            notes.append(
                {
                    "about": name,
                    "note": f"group {name!r} does not exist on the instance: nobody gets the agent through it",
                    "fix": "create the group (or set the target's missing_groups: create) and run `provision sync`",
                }
            )
            continue
        if not group_has_members(group, groups):
            notes.append(
                {
                    "about": name,
                    "note": f"group {name!r} has no members: nobody gets the agent through it",
                    "fix": f"add the agent's users to group {name!r} (Admin Panel > Users > Groups)",
                }
            )
        if reads_files and members_may_upload(group, groups, default) is False:
            below = groups_below_that_may_upload(group, groups)
            notes.append(
                {
                    "about": name,
                    "note": f"group {name!r} lacks the chat.file_upload permission: "
                    + (
                        f"only the members of {', '.join(repr(b) for b in below)}, below it, see an attach button "
                        "for this agent"
                        if below
                        else "its members see no attach button for this agent"
                    ),
                    "fix": f"allow File Upload in the permissions of group {name!r}, or of a group above it "
                    "(Admin Panel > Users > Groups)",
                }
            )
    if reads_files and explained["row"]["public"] and default is False:
        notes.append(
            {
                "about": "permissions",
                "note": "users may not upload files by default (chat.file_upload off): only admins can attach files",
                "fix": "Admin Panel > Users > Groups > Default permissions: allow File Upload",
            }
        )
    return notes
