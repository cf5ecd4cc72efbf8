"""Load a blueprint directory into a Catalog, collecting every problem before raising.

Pure apart from reading files: no network. The result is what desired.py turns into the
state Open WebUI should have.
"""

from __future__ import annotations

import difflib
import os
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .blueprints import Agent, Blueprint, Capability, CapabilityCatalog, FeatureCatalog, FeatureDef, Suggestion
from .errors import BlueprintError, Problem
from .features import NATIVE_FEATURES, RESERVED_FEATURE_NAMES
from .icons import resolve_icon
from .yaml_source import PathKey, SourceFile, read_yaml

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


@dataclass(frozen=True)
class Catalog:
    """Everything a blueprint directory says, validated and cross-checked."""

    root: Path
    capabilities: Mapping[str, Capability]
    features: Mapping[str, FeatureDef]  # custom features only
    feature_icons: Mapping[str, str | None]
    blueprints: tuple[LoadedBlueprint, ...]


def load_catalog(root: Path) -> Catalog:
    """Read and check `root`; raise BlueprintError listing every problem found."""
    display_root = str(root)
    if not root.exists():
        raise BlueprintError([Problem(display_root, None, "", "directory not found")])
    if not root.is_dir():
        raise BlueprintError([Problem(display_root, None, "", "not a directory")])

    problems: list[Problem] = []
    files = _yaml_files(root, problems)
    if not any(os.path.lexists(root / name) for name in (CAPABILITIES_FILE, "capabilities.yml")):
        problems.append(
            Problem(str(root / CAPABILITIES_FILE), None, "", "missing: the capability catalog is required")
        )
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
            cap_source, catalog = _load_model(path, CapabilityCatalog, problems)
            if catalog:
                capabilities = dict(catalog.capabilities)
        elif path.name == FEATURES_FILE:
            feature_source, feature_catalog = _load_model(path, FeatureCatalog, problems)
            features_broken = feature_catalog is None
            if feature_catalog:
                features = dict(feature_catalog.features)

    feature_icons = _check_features(features, feature_source, root, problems)
    known_features = NATIVE_FEATURES | set(features)
    if cap_source and not features_broken:  # else every custom feature would look unknown
        for name, cap in capabilities.items():
            if cap.serves and cap.serves not in known_features:
                problems.append(
                    cap_source.problem(
                        ("capabilities", name, "serves"),
                        f"unknown feature {cap.serves!r}{_suggest(cap.serves, known_features)}; "
                        f"native features are {', '.join(sorted(NATIVE_FEATURES))}, custom ones "
                        f"are defined in {FEATURES_FILE}",
                    )
                )

    loaded: list[LoadedBlueprint] = []
    for path in blueprint_files:
        source, blueprint = _load_model(path, Blueprint, problems)
        if source and blueprint:
            result = _check_blueprint(blueprint, source, capabilities, root, problems)
            if result:
                loaded.append(result)
    _check_unique_blueprint_ids(loaded, problems)

    if problems:
        raise BlueprintError(problems)
    return Catalog(
        root=root,
        capabilities=capabilities,
        features=features,
        feature_icons=feature_icons,
        blueprints=tuple(sorted(loaded, key=lambda lb: lb.blueprint.id)),
    )


def _yaml_files(root: Path, problems: list[Problem]) -> list[Path]:
    files: list[Path] = []
    try:
        entries = sorted(root.iterdir())
    except OSError as exc:
        problems.append(Problem(str(root), None, "", f"cannot list directory: {exc.strerror or exc}"))
        return files
    for entry in entries:
        if entry.name.startswith(".") or entry.suffix not in (".yaml", ".yml"):
            continue
        if entry.stem in ("capabilities", "features") and entry.name not in RESERVED_FILES:
            problems.append(Problem(str(entry), None, "", f"rename to {entry.stem}.yaml (provision reads only that name)"))
            continue
        if not entry.is_file():  # follows symlinks; never opens a FIFO or a device
            problems.append(Problem(str(entry), None, "", not_a_file(entry)))
            continue
        files.append(entry)
    return files


def not_a_file(path: Path) -> str:
    """Why `path`, which is_file() refused, cannot be read."""
    if path.is_symlink() and not path.exists():
        return "a symlink that leads nowhere (dangling, or a loop)"
    return "not a regular file"


def _load_model(
    path: Path, model: type[M], problems: list[Problem]
) -> tuple[SourceFile | None, M | None]:
    source, read_problems = read_yaml(path, str(path))
    problems.extend(read_problems)
    if source is None:
        return None, None
    if read_problems:  # duplicate keys: the data is not what the author meant
        return source, None
    if not isinstance(source.data, dict):
        found = "an empty file" if source.data is None else _describe(source.data)
        problems.append(source.problem((), f"expected a mapping (`key: value` lines) at the top level, found {found}"))
        return source, None
    try:
        return source, model.model_validate(source.data)
    except ValidationError as exc:
        problems.extend(pydantic_problems(exc, source))
        return source, None


_ALL_FIELDS = {
    name
    for model in (Blueprint, Agent, CapabilityCatalog, Capability, FeatureCatalog, FeatureDef, Suggestion)
    for name in model.model_fields
} | {"groups", "transport", "url", "model", "api_key_env", "calls"}

def pydantic_problems(exc: ValidationError, source: SourceFile) -> list[Problem]:
    """One Problem per pydantic error, with the loc mapped onto the YAML's own path and line."""
    errors = [e for e in exc.errors() if not _wrong_union_branch(tuple(e["loc"]), source.data)]
    problems: list[Problem] = []
    for error in errors or exc.errors():
        loc = _clean_loc(tuple(error["loc"]), source.data, error["type"])
        problems.append(source.problem(loc, _message(error, loc)))
    return problems


def _wrong_union_branch(loc: PathKey, data: Any) -> bool:
    """True for an error from a union branch that does not match the kind of value written.

    For `access: {groups: x}` pydantic reports both "not 'public' or 'private'" (the literal
    branch) and the real problem inside the mapping; only the second helps the reader.
    """
    current = data
    for part in loc:
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            current = current[part]
        elif isinstance(part, str) and part.startswith("literal["):
            return isinstance(current, (dict, list))
        elif isinstance(part, str) and part[:1].isupper():  # a model branch, e.g. GroupAccess
            return not isinstance(current, dict)
        else:
            return False
    return False


def _message(error: dict[str, Any], loc: PathKey) -> str:
    kind = error["type"]
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        name = str(loc[-1]) if loc else ""
        return f"unknown field{_suggest(name, _ALL_FIELDS)}"
    if kind == "string_pattern_mismatch":
        pattern = error.get("ctx", {}).get("pattern", "")
        hints = {
            r"^[a-z][a-z0-9_-]*$": "use lowercase letters, digits, '-' and '_', starting with a letter (no dots or spaces)",
            r"^[a-z][a-z0-9_]*$": "use lowercase letters, digits and '_', starting with a letter",
            r"^[a-z][a-z0-9_.-]*$": "use lowercase letters, digits, '_', '-' and '.', starting with a letter",
            r"^https?://\S+$": "expected an http:// or https:// URL",
            r"^[A-Z_][A-Z0-9_]*$": "expected an environment variable name like MY_AGENT_KEY",
        }
        return f"invalid value {error.get('input')!r}: " + hints.get(pattern, f"must match {pattern}")
    if kind in ("too_short", "string_too_short") and not str(error.get("input") or "").strip():
        return "must not be empty"
    if kind in ("too_long", "string_too_long"):
        limit = error.get("ctx", {}).get("max_length")
        return f"too long: {len(error.get('input') or '')} {'characters' if kind == 'string_too_long' else 'items'}, the limit is {limit}"
    message = str(error["msg"])
    if kind in _EXPECTED and not isinstance(error.get("input"), _EXPECTED[kind]):
        return f"{message}, found {_describe(error.get('input'))}"
    return message[len("Value error, ") :] if message.startswith("Value error, ") else message


# pydantic error type -> the Python types that are the kind of value the field wants
_EXPECTED: dict[str, type | tuple[type, ...]] = {
    "string_type": str,
    "list_type": list,
    "dict_type": dict,
    "model_type": dict,
    "model_attributes_type": dict,
}


def _describe(value: Any) -> str:
    """A YAML reader's name for a value: what they wrote, not Python's type."""
    if value is None:
        return "nothing (the value is empty)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()} (quote it if you meant text)"
    if isinstance(value, (int, float)):
        return f"the number {value} (quote it if you meant text)"
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"the {type(value).__name__} {value} (quote it if you meant text)"  # a date, bytes, a set


def _clean_loc(loc: PathKey, data: Any, kind: str) -> PathKey:
    """Drop pydantic's union-branch tags so the loc is a path through the YAML itself."""
    out: list[str | int] = []
    current = data
    for index, part in enumerate(loc):
        last = index == len(loc) - 1
        if isinstance(current, dict) and part in current:
            current = current[part]
            out.append(part)
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            current = current[part]
            out.append(part)
        elif last and kind in ("missing", "extra_forbidden") and isinstance(current, dict):
            out.append(part)
        elif isinstance(current, dict) and isinstance(part, str) and part in ("[key]",):
            continue
    return tuple(out)


def _suggest(name: str, options: set[str] | frozenset[str] | Mapping[str, Any]) -> str:
    close = difflib.get_close_matches(name, list(options), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


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
) -> LoadedBlueprint | None:
    before = len(problems)
    supported: set[str] = set()
    _check_unique(blueprint.steps, "steps", "step", source, problems)
    for s, step in enumerate(blueprint.steps):
        for c, name in enumerate(step.calls):
            cap = capabilities.get(name)
            if cap is None:
                if capabilities:  # without a catalog every call would be reported again
                    problems.append(
                        source.problem(
                            ("steps", s, "calls", c),
                            f"unknown capability {name!r}{_suggest(name, capabilities)}",
                        )
                    )
            elif cap.serves:
                supported.add(cap.serves)
    _check_unique(blueprint.agents, "agents", "agent", source, problems)
    for a, agent in enumerate(blueprint.agents):
        if not blueprint.backend and not (agent.backend and agent.backend.url):
            problems.append(source.problem(("agents", a), "no backend: set backend.url on the blueprint or on this agent"))
        for d, feature in enumerate(agent.defaults):
            if feature not in supported and capabilities:  # without a catalog nothing is supported
                have = ", ".join(sorted(supported)) or "none"
                problems.append(
                    source.problem(
                        ("agents", a, "defaults", d),
                        f"{feature!r} is not a feature this blueprint supports{_suggest(feature, supported)}; "
                        f"it supports {have}, from the capabilities its steps call",
                    )
                )
    icon = _icon(blueprint.icon, ("icon",), source, root, problems)
    agent_icons = {
        agent.id: _icon(agent.icon, ("agents", a, "icon"), source, root, problems) or icon
        for a, agent in enumerate(blueprint.agents)
    }
    if len(problems) > before:
        return None
    return LoadedBlueprint(blueprint, source, frozenset(supported), icon, agent_icons)


def _icon(
    value: str | None, path: PathKey, source: SourceFile, root: Path, problems: list[Problem]
) -> str | None:
    if not value:
        return None
    try:
        return resolve_icon(value, root, allow_svg=False)
    except ValueError as exc:
        problems.append(source.problem(path, str(exc)))
        return None


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
