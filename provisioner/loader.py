"""Load a blueprint directory into a Catalog, collecting every problem before raising.

Pure apart from reading files: no network. The result is what desired.py turns into the
state Open WebUI should have.

Layer: source.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .blueprints import (
    Blueprint,
    Capability,
    CapabilityCatalog,
    FeatureCatalog,
    FeatureDef,
    GroupAccess,
    Suggestion,
    agent_backend,
)
from .errors import BlueprintError, Problem
from .features import NATIVE_FEATURES, RESERVED_FEATURE_NAMES
from .icons import resolve_icon
from .owui_capabilities import CAPABILITY_KEYS, OVERRIDABLE_DEFAULTS
from .schema_problems import describe_value, pydantic_problems, suggest
from .urls import plain_http_host
from .variables import Variables, expand, secret_problems
from .yaml_source import PathKey, SourceFile, format_path, read_yaml

CAPABILITIES_FILE = "capabilities.yaml"
FEATURES_FILE = "features.yaml"
RESERVED_FILES = frozenset({CAPABILITIES_FILE, FEATURES_FILE})

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class LoadedBlueprint:
    """A valid blueprint with where it came from and what it supports."""

    blueprint: Blueprint
    source: SourceFile
    supported_features: frozenset[str]
    icon: str | None
    agent_icons: Mapping[str, str | None]
    # What its agents take from the chat (`documents`, `images`): the `reads` of the capabilities
    # its steps call.
    reads: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Catalog:
    """Everything a blueprint directory says, validated and cross-checked."""

    root: Path
    capabilities: Mapping[str, Capability]
    features: Mapping[str, FeatureDef]  # custom features only
    feature_icons: Mapping[str, str | None]
    blueprints: tuple[LoadedBlueprint, ...]
    # Files in the directory that were not read, each with why (printed as notes, not errors).
    notes: tuple[Problem, ...] = ()
    # capabilities.yaml as read, for the line of each capability (`provision explain`).
    capability_source: SourceFile | None = None


def load_catalog(root: Path, variables: Variables | None = None) -> Catalog:
    """Read and check `root`; raise BlueprintError listing every problem found.

    `${NAME}` references in string values are expanded first (variables.py); without
    `variables`, only their syntax is checked and unresolved ones become placeholders.
    """
    variables = variables or Variables()
    used: list[tuple[str, SourceFile, PathKey]] = []
    strings: list[tuple[SourceFile, list[tuple[PathKey, str, tuple[str, ...]]]]] = []  # expanded, per file
    display_root = str(root)
    if not root.exists():
        raise BlueprintError([Problem(display_root, None, "", "directory not found")])
    if not root.is_dir():
        raise BlueprintError([Problem(display_root, None, "", "not a directory")])

    problems: list[Problem] = []
    files = _yaml_files(root, problems)
    if not any(is_yaml_name(p.name) and Path(p.name).stem.lower() == "capabilities" for p in _entries(root)):
        problems.append(Problem(str(root / CAPABILITIES_FILE), None, "", "missing: the capability catalog is required"))
    blueprint_files = [f for f in files if f.name not in RESERVED_FILES]
    if not blueprint_files:
        problems.append(Problem(display_root, None, "", "no blueprint files (*.yaml) found"))

    capabilities: dict[str, Capability] = {}
    cap_source: SourceFile | None = None
    features: dict[str, FeatureDef] = {}
    feature_source: SourceFile | None = None
    features_broken = False  # features.yaml exists but does not load
    for path in files:
        if path.name == CAPABILITIES_FILE:
            cap_source, catalog = _load_model(path, CapabilityCatalog, problems, variables, used, strings)
            if catalog:
                capabilities = dict(catalog.capabilities)
        elif path.name == FEATURES_FILE:
            feature_source, feature_catalog = _load_model(path, FeatureCatalog, problems, variables, used, strings)
            features_broken = feature_catalog is None
            if feature_catalog:
                features = dict(feature_catalog.features)

    feature_icons = _check_features(features, feature_source, root, problems)
    known_features = NATIVE_FEATURES | set(features)
    bad_serves: set[str] = set()  # capabilities whose `serves` is already reported
    if cap_source and not features_broken:  # else every custom feature would look unknown
        for name, cap in capabilities.items():
            if cap.serves and cap.serves not in known_features:
                bad_serves.add(name)
                problems.append(
                    cap_source.problem(
                        ("capabilities", name, "serves"),
                        f"unknown feature {cap.serves!r}{suggest(cap.serves, known_features)}; "
                        f"native features are {', '.join(sorted(NATIVE_FEATURES))}, custom ones "
                        f"are defined in {FEATURES_FILE}",
                    )
                )

    loaded: list[LoadedBlueprint] = []
    for path in blueprint_files:
        source, blueprint = _load_model(path, Blueprint, problems, variables, used, strings)
        if source and blueprint:
            result = _check_blueprint(blueprint, source, capabilities, root, problems, bad_serves, cap_source)
            if result:
                loaded.append(result)
    _check_unique_blueprint_ids(loaded, problems)
    _check_no_key_in_variables(loaded, used, problems)
    _check_no_key_value_in_variables(loaded, strings, variables, problems)

    if problems:
        raise BlueprintError(problems)
    icons = [f.icon for f in features.values()] + [
        icon for lb in loaded for icon in (lb.blueprint.icon, *(a.icon for a in lb.blueprint.agents))
    ]
    read = {_resolved(f) for f in files} | _icon_files(root, icons)
    return Catalog(
        root=root,
        capabilities=capabilities,
        features=features,
        feature_icons=feature_icons,
        blueprints=tuple(sorted(loaded, key=lambda lb: lb.blueprint.id)),
        notes=tuple(unread_files(root, read)),
        capability_source=cap_source,
    )


def _entries(root: Path) -> list[Path]:
    try:
        return list(root.iterdir())
    except OSError:
        return []  # _yaml_files reports it


def is_yaml_name(name: str) -> bool:
    """`.yaml` and `.yml` in any letter case: a file saved as `desk.YAML` is a blueprint too."""
    return not name.startswith(".") and Path(name).suffix.lower() in (".yaml", ".yml")


def _yaml_files(root: Path, problems: list[Problem]) -> list[Path]:
    files: list[Path] = []
    try:
        entries = sorted(root.iterdir())
    except OSError as exc:
        problems.append(Problem(str(root), None, "", f"cannot list directory: {exc.strerror or exc}"))
        return files
    for entry in entries:
        if not is_yaml_name(entry.name):
            continue  # named in a note by unread_files
        stem = Path(entry.name).stem
        if stem.lower() in ("capabilities", "features") and entry.name not in RESERVED_FILES:
            problems.append(
                Problem(str(entry), None, "", f"rename to {stem.lower()}.yaml (provision reads only that name)")
            )
            continue
        if not entry.is_file():  # follows symlinks; never opens a FIFO or a device
            problems.append(Problem(str(entry), None, "", not_a_file(entry)))
            continue
        files.append(entry)
    return files


# A blueprint directory in a big repository could hold thousands of unrelated files: name this
# many, count the rest, and stop looking after MAX_SURVEYED entries.
MAX_NOTES = 50
MAX_SURVEYED = 10_000


def unread_files(
    root: Path, read: set[Path], why: Callable[[Path], str] | None = None, ignored: frozenset[str] = frozenset()
) -> list[Problem]:
    """A note for every file under `root` that provision did not read, saying `why` (default:
    why a blueprint directory's file is not read); directories named in `ignored` are not entered.

    A blueprint saved under another name (`desk.yaml.bak`, `team/desk.yaml`, `.desk.yaml`) is
    otherwise skipped without a word, and its agents silently drop out of the pipe.
    """
    explain = why or _why_unread
    notes: list[Problem] = []
    extra = surveyed = 0
    for directory, dirnames, filenames in os.walk(root, onerror=lambda _exc: None):
        surveyed += len(dirnames) + len(filenames)
        if surveyed > MAX_SURVEYED:
            notes.append(Problem(str(root), None, "", f"more than {MAX_SURVEYED} files: the rest were not looked at"))
            break
        here = Path(directory)
        hidden = sorted(d for d in dirnames if d.startswith("."))
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in ignored)
        unread = [(here / d, "hidden directory, not read") for d in hidden] + [
            (here / f, explain(here / f)) for f in sorted(filenames) if _resolved(here / f) not in read
        ]
        for path, reason in unread:
            if len(notes) < MAX_NOTES:
                notes.append(Problem(str(path), None, "", reason))
            else:
                extra += 1
    if extra:
        notes.append(Problem(str(root), None, "", f"{extra} more files not read"))
    return notes


def _why_unread(path: Path) -> str:
    if path.name.startswith("."):
        return "hidden file, not read"
    if path.suffix.lower() in (".yaml", ".yml"):
        return "not read: blueprints are read only from the top level of the blueprint directory"
    return "not read: not a .yaml/.yml file, and no blueprint or feature uses it as an icon"


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: never one of the files read
        return path


def _icon_files(root: Path, values: list[str | None]) -> set[Path]:
    """The files that icon values name (URLs and data URIs name none)."""
    return {
        _resolved(root / value.strip())
        for value in values
        if value and not value.strip().startswith(("data:", "http://", "https://"))
    }


def not_a_file(path: Path) -> str:
    """Why `path`, which is_file() refused, cannot be read."""
    if path.is_symlink() and not path.exists():
        return "a symlink that leads nowhere (dangling, or a loop)"
    return "not a regular file"


def _load_model(
    path: Path,
    model: type[M],
    problems: list[Problem],
    variables: Variables | None = None,
    used: list[tuple[str, SourceFile, PathKey]] | None = None,
    strings: list[tuple[SourceFile, list[tuple[PathKey, str, tuple[str, ...]]]]] | None = None,
) -> tuple[SourceFile | None, M | None]:
    source, read_problems = read_yaml(path, str(path))
    problems.extend(read_problems)
    if source is None:
        return None, None
    if read_problems:  # duplicate keys: the data is not what the author meant
        return source, None
    if not isinstance(source.data, dict):
        found = "an empty file" if source.data is None else describe_value(source.data)
        problems.append(source.problem((), f"expected a mapping (`key: value` lines) at the top level, found {found}"))
        return source, None
    expanded = expand(source, variables or Variables())
    if used is not None:
        used.extend((name, source, where) for name, where in expanded.used)
    if strings is not None and expanded.strings:
        strings.append((source, expanded.strings))
    if expanded.problems:
        problems.extend(expanded.problems)
        return source, None
    try:
        return source, model.model_validate(expanded.data)
    except ValidationError as exc:
        found_problems = pydantic_problems(exc, source)
        # Offline, a value built from an unknown variable holds a placeholder: its own checks
        # wait for `validate --target`; the rest of the file is still checked.
        placeholders = {format_path(where) for where in expanded.unresolved}
        kept = [p for p in found_problems if p.field not in placeholders]
        if not kept:
            where, name = next(iter(expanded.unresolved.items()))
            kept = [
                source.problem(
                    where, f"cannot be checked until ${{{name}}} is known; run `provision validate --target NAME`"
                )
            ]
        problems.extend(kept)
        return source, None


def _check_no_key_in_variables(
    loaded: list[LoadedBlueprint], used: list[tuple[str, SourceFile, PathKey]], problems: list[Problem]
) -> None:
    """A variable that is also a backend's api_key_env holds a secret: refuse to expand it."""
    key_names = _backend_key_names(loaded)
    for name, source, where in used:
        if name in key_names:
            problems.append(
                source.problem(
                    where,
                    f"${{{name}}} is a backend's API key (api_key_env); secrets never go into blueprint values",
                )
            )


def _backend_key_names(loaded: list[LoadedBlueprint]) -> set[str]:
    return {
        backend.api_key_env
        for lb in loaded
        for backend in [lb.blueprint.backend, *(a.backend for a in lb.blueprint.agents)]
        if backend is not None and backend.api_key_env
    }


def _check_no_key_value_in_variables(
    loaded: list[LoadedBlueprint],
    strings: list[tuple[SourceFile, list[tuple[PathKey, str, tuple[str, ...]]]]],
    variables: Variables,
    problems: list[Problem],
) -> None:
    """No expanded value may contain a backend's key, whatever variable brought it (an alias)."""
    keys = {
        f"the value of {name} (a backend's API key)": variables.env[name]
        for name in sorted(_backend_key_names(loaded))
        if variables.env.get(name)
    }
    for source, expanded in strings:
        problems.extend(secret_problems(expanded, keys, source))


def _check_features(
    features: Mapping[str, FeatureDef], source: SourceFile | None, root: Path, problems: list[Problem]
) -> dict[str, str | None]:
    icons: dict[str, str | None] = {}
    if source is None:
        return icons
    for name, feature in features.items():
        if name in RESERVED_FEATURE_NAMES:
            problems.append(
                source.problem(
                    ("features", name),
                    f"{name!r} is Open WebUI's own; custom features need another name",
                )
            )
        for locale, text in feature.i18n.items():
            if text.description and not feature.description:
                problems.append(
                    source.problem(
                        ("features", name, "i18n", locale, "description"),
                        "translates a description the feature does not have: give the feature a description first",
                    )
                )
        icons[name] = None
        if feature.icon:
            try:
                icons[name] = resolve_icon(feature.icon, root, allow_svg=True)
            except ValueError as exc:
                problems.append(source.problem(("features", name, "icon"), str(exc)))
    return icons


def _check_blueprint(
    blueprint: Blueprint,
    source: SourceFile,
    capabilities: Mapping[str, Capability],
    root: Path,
    problems: list[Problem],
    bad_serves: set[str] | frozenset[str] = frozenset(),
    cap_source: SourceFile | None = None,
) -> LoadedBlueprint | None:
    before = len(problems)
    supported: set[str] = set()
    reads: set[str] = set()
    calls_bad_serves = False  # then a default's "not supported" only repeats that error
    _check_unique(blueprint.steps, "steps", "step", source, problems)
    _check_backends(blueprint, source, problems)
    for s, step in enumerate(blueprint.steps):
        check_no_repeats(step.calls, ("steps", s, "calls"), source, problems)
        for c, name in enumerate(step.calls):
            cap = capabilities.get(name)
            if cap is None:
                if capabilities:  # without a catalog every call would be reported again
                    where = cap_source.path if cap_source else CAPABILITIES_FILE
                    problems.append(
                        source.problem(
                            ("steps", s, "calls", c),
                            f"unknown capability {name!r}{suggest(name, capabilities)}; "
                            f"capabilities are defined in {where}",
                        )
                    )
            else:
                reads.update(cap.reads)
                if name in bad_serves:
                    calls_bad_serves = True
                elif cap.serves:
                    supported.add(cap.serves)
    _check_openwebui_capabilities(blueprint, source, problems)
    if capabilities:  # without a catalog nothing reads anything
        _check_uploads_are_read(blueprint, reads, source, problems)
    _check_unique(blueprint.agents, "agents", "agent", source, problems)
    for a, agent in enumerate(blueprint.agents):
        check_no_repeats(agent.defaults, ("agents", a, "defaults"), source, problems)
        if isinstance(agent.access, GroupAccess):
            check_no_repeats(agent.access.groups, ("agents", a, "access", "groups"), source, problems)
        if not blueprint.backend and not (agent.backend and agent.backend.url):
            problems.append(
                source.problem(("agents", a), "no backend: set backend.url on the blueprint or on this agent")
            )
        for d, feature in enumerate(agent.defaults):
            if (
                feature not in supported and capabilities and not calls_bad_serves
            ):  # without a catalog nothing is supported
                have = ", ".join(sorted(supported)) or "none"
                problems.append(
                    source.problem(
                        ("agents", a, "defaults", d),
                        f"{feature!r} is not a feature this blueprint supports{suggest(feature, supported)}; "
                        f"it supports {have}, from the capabilities its steps call",
                    )
                )
    _check_translations(blueprint, source, problems)
    icon = _icon(blueprint.icon, ("icon",), source, root, problems)
    agent_icons = {
        agent.id: _icon(agent.icon, ("agents", a, "icon"), source, root, problems) or icon
        for a, agent in enumerate(blueprint.agents)
    }
    if len(problems) > before:
        return None
    return LoadedBlueprint(blueprint, source, frozenset(supported), icon, agent_icons, frozenset(reads))


def _check_translations(blueprint: Blueprint, source: SourceFile, problems: list[Problem]) -> None:
    """A translation translates a default text: the field must exist there, and a suggestion list
    must be as long as the default's, so that the Nth card means the same in every language."""
    for locale, text in (blueprint.i18n or {}).items():
        where: PathKey = ("i18n", locale)
        if text.description and not blueprint.description:
            problems.append(
                source.problem((*where, "description"), "translates a description the blueprint does not have")
            )
        _check_translated_suggestions(
            text.suggestions, blueprint.suggestions, "the blueprint's", where, source, problems
        )
    for a, agent in enumerate(blueprint.agents):
        for locale, agent_text in (agent.i18n or {}).items():
            where = ("agents", a, "i18n", locale)
            if agent_text.description and not (agent.description or blueprint.description):
                problems.append(
                    source.problem(
                        (*where, "description"), "translates a description neither the agent nor its blueprint has"
                    )
                )
            own = agent.suggestions is not None
            default = agent.suggestions if own else blueprint.suggestions
            whose = "the agent's" if own else "the blueprint's (the agent has none of its own)"
            _check_translated_suggestions(agent_text.suggestions, default, whose, where, source, problems)


def _check_translated_suggestions(
    translated: list[Suggestion] | None,
    default: list[Suggestion] | None,
    whose: str,
    where: PathKey,
    source: SourceFile,
    problems: list[Problem],
) -> None:
    if translated is None:
        return
    path = (*where, "suggestions")
    if default is None:
        problems.append(source.problem(path, f"translates suggestions that are not there: {whose} default has none"))
        return
    if len(translated) != len(default):
        problems.append(
            source.problem(
                path,
                f"{len(translated)} suggestions, where {whose} default has {len(default)}: translate each one, "
                "in the same order, so that the Nth suggestion means the same in every language",
            )
        )
        return
    for index, (mine, theirs) in enumerate(zip(translated, default, strict=True)):
        if mine.subtitle and not theirs.subtitle:
            problems.append(
                source.problem(
                    (*path, index, "subtitle"),
                    f"translates a subtitle that suggestion {index + 1} of {whose} default does not have",
                )
            )


def _icon(value: str | None, path: PathKey, source: SourceFile, root: Path, problems: list[Problem]) -> str | None:
    if not value:
        return None
    try:
        return resolve_icon(value, root, allow_svg=False)
    except ValueError as exc:
        problems.append(source.problem(path, str(exc)))
        return None


def check_no_repeats(values: list[str], path: PathKey, source: SourceFile, problems: list[Problem]) -> None:
    """A value listed twice is an error (it would be written twice, e.g. a doubled defaultFilterIds)."""
    first: dict[str, int] = {}
    for index, value in enumerate(values):
        if value in first:
            problems.append(
                source.problem(
                    (*path, index),
                    f"{value!r} is listed twice (first at line {source.line(*path, first[value])}); list each once",
                )
            )
        else:
            first[value] = index


def _check_backends(blueprint: Blueprint, source: SourceFile, problems: list[Problem]) -> None:
    """Plain http only to loopback unless the backend says `insecure: true`; a key read on the
    server needs the variable's name."""
    base = blueprint.backend
    if base is not None:
        _check_backend(base.url, base.insecure, base.api_key_from, base.api_key_env, ("backend",), source, problems)
        _check_oauth_header(agent_backend(base, None), ("backend",), source, problems)
    for a, agent in enumerate(blueprint.agents):
        over = agent.backend
        if over is not None and (over.url is not None or over.oauth_token_header is not None):
            _check_oauth_header(agent_backend(base, over), ("agents", a, "backend"), source, problems)
        # an override that changes none of these leaves the blueprint's backend, checked above
        if over is None or (over.url is None and over.api_key_from is None and over.insecure is None):
            continue
        merged = agent_backend(base, over)
        _check_backend(
            merged["url"],
            merged["insecure"],
            merged["api_key_from"],
            merged["api_key_env"],
            ("agents", a, "backend"),
            source,
            problems,
        )


def _check_oauth_header(backend: Mapping[str, Any], path: PathKey, source: SourceFile, problems: list[Problem]) -> None:
    """The user's OAuth token goes only over https, or to loopback; `insecure` does not allow it."""
    url = backend["url"] or ""
    if not backend["oauth_token_header"] or url.lower().startswith("https://"):
        return
    host = plain_http_host(url)
    if host:
        problems.append(
            source.problem(
                (*path, "oauth_token_header"),
                f"the user's OAuth token would cross the network to {host} in clear text: "
                "oauth_token_header needs an https:// backend URL (or a loopback one), whatever `insecure` says",
            )
        )


# The Open WebUI capability that shows each input: the inputs that make it useful, and the
# `reads` value to suggest.
_UPLOAD_KEYS: Mapping[str, tuple[frozenset[str], str]] = {
    "file_upload": (frozenset({"documents", "images"}), "documents"),
    "vision": (frozenset({"images"}), "images"),
}


def _check_uploads_are_read(blueprint: Blueprint, reads: set[str], source: SourceFile, problems: list[Problem]) -> None:
    """Uploads switched on by hand that no step reads would reach an agent that ignores them."""
    for key, (needs, suggested) in _UPLOAD_KEYS.items():
        if blueprint.openwebui_capabilities.get(key) is True and not reads & needs:
            problems.append(
                source.problem(
                    ("openwebui_capabilities", key),
                    f"{key}: true lets users attach {suggested}, but no capability this blueprint's steps call "
                    f"reads them; add `reads: [{suggested}]` to the capability in {CAPABILITIES_FILE} that does "
                    f"(its agents then get {key} without this line)",
                )
            )


def _check_backend(
    url: str | None,
    insecure: bool,
    key_from: str,
    key_env: str | None,
    path: PathKey,
    source: SourceFile,
    problems: list[Problem],
) -> None:
    host = plain_http_host(url) if url else None
    if host and not insecure:
        problems.append(
            source.problem(
                (*path, "url"),
                f"plain http to {host}, which is not loopback: the key and every chat would cross the "
                "network in clear text. Use https, or add `insecure: true` to this backend if you mean it",
            )
        )
    if key_from == "server" and not key_env:
        problems.append(
            source.problem(
                (*path, "api_key_from"),
                "`api_key_from: server` needs `api_key_env`: the name of the variable the Open WebUI server reads",
            )
        )


def _check_openwebui_capabilities(blueprint: Blueprint, source: SourceFile, problems: list[Problem]) -> None:
    """Each key of openwebui_capabilities must be one a blueprint may set; errors on the key's line."""
    allowed = ", ".join(OVERRIDABLE_DEFAULTS)
    for key in blueprint.openwebui_capabilities:
        if key in OVERRIDABLE_DEFAULTS:
            continue
        if key in CAPABILITY_KEYS:
            why = (
                f"cannot set {key}; a blueprint may set only {allowed} (the feature toggles follow "
                "its capabilities; memory, builtin_tools and terminal stay off)"
            )
        else:
            why = f"unknown Open WebUI capability {key!r}{suggest(key, OVERRIDABLE_DEFAULTS)}; a blueprint may set {allowed}"
        problems.append(source.problem(("openwebui_capabilities", key), why))


def _check_unique(items: list[Any], field: str, noun: str, source: SourceFile, problems: list[Problem]) -> None:
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        if item.id in seen:
            problems.append(
                source.problem(
                    (field, index, "id"),
                    f"duplicate {noun} id {item.id!r} (first at line {source.line(field, seen[item.id], 'id')})",
                )
            )
        else:
            seen[item.id] = index


def _check_unique_blueprint_ids(loaded: list[LoadedBlueprint], problems: list[Problem]) -> None:
    by_id: dict[str, list[LoadedBlueprint]] = defaultdict(list)
    for lb in loaded:
        by_id[lb.blueprint.id].append(lb)
    for bp_id, group in by_id.items():
        if len(group) > 1:
            files = ", ".join(lb.source.path for lb in group)
            for lb in group:
                problems.append(lb.source.problem(("id",), f"duplicate blueprint id {bp_id!r} (in {files})"))
