"""`provision dump`: the instance's agent rows written back as blueprint YAML.

`dump_rows` is pure (rows in, file contents out); `write_dump` writes them into a directory.

Which rows: every row provision owns (the ownership marker) and every hand-made agent row (an
id `aihub_agent_pipe.<blueprint>.<agent>` with no base model: the pipe serves it). Rows with a
base model (workspace models, wrappers of an agent) and plain LLM rows are not agents the
blueprint format can describe; naming one is refused with the reason (docs/commands.md, `provision dump`).

What the format holds is written (name, description, access, tags, suggestions, translations, icon, the pipe's
backend, the toggles as capability stubs with `serves:`); what it cannot hold is reported per
row, never guessed. Owned rows come back so that `diff` shows no change; hand-made rows so that
`diff --adopt` shows only what taking ownership sets (the marker and the fields provision always
writes on its rows: `Dumped.adopting`).

Layer: output.
"""

from __future__ import annotations

import ast
import base64
import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .contract import FEATURE_FILTER_ID, PIPE_FUNCTION_ID, TOGGLE_FILTER_PREFIX, agent_of_model, split_agent_key
from .errors import ProvisionError
from .features import is_native
from .icons import resolve_icon, sniff_image_type
from .locales import locale_problem
from .orphans import agent_entries
from .owui_capabilities import ALWAYS_OFF, OVERRIDABLE_DEFAULTS, READS_CAPABILITIES, model_capabilities
from .paths import blocked_paths, make_dirs
from .state import MARKER_KEY, is_managed
from .toggle_filters import render_toggle_filter, toggle_filter_id

PREFIX = PIPE_FUNCTION_ID + "."
# Names that become file names: always matched whole (fullmatch; `$` would let a trailing
# newline through), and every path checked once more before the write (_unsafe_name).
_IDENTIFIER = re.compile(r"[a-z][a-z0-9_-]{0,63}")
_FEATURE = re.compile(r"[a-z][a-z0-9_]{0,47}")
_PATH_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_READ_CAPABILITY = {"images": "read_images", "documents": "read_documents"}
_PLAIN_CAPABILITY = "answer"  # a blueprint needs one step that calls something
_STUB = "Written by provision dump: say what the agent does here."
_EXTENSIONS = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/svg+xml": "svg",
}
# What `diff --adopt` sets on a hand-made row besides the fields the dump wrote: provision's own.
OWNED_PATHS = ("meta.aihub", "meta.filterIds", "meta.defaultFeatureIds", "meta.capabilities.", "is_active")


class DumpSelectionError(ProvisionError):
    """A named id or pattern matched no row, or a row that is not an agent."""


@dataclass
class RowReport:
    """One dumped row: where it went, whether it is owned, and what the format could not hold."""

    id: str
    file: str
    owned: bool
    not_expressed: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Dumped:
    files: Mapping[str, bytes]  # path inside DIR -> content
    rows: Sequence[RowReport]

    @property
    def adopting(self) -> list[str]:
        """The hand-made rows: `diff`/`sync` need `--adopt model/<id>` for each."""
        return [r.id for r in self.rows if not r.owned]


def select_rows(models: Iterable[Mapping[str, Any]], selectors: Sequence[str]) -> list[Mapping[str, Any]]:
    """The rows to dump: the named ones (ids or shell patterns), else every agent row."""
    rows = sorted((m for m in models if isinstance(m.get("id"), str)), key=lambda m: str(m["id"]))
    if not selectors:
        return [m for m in rows if _why_not_agent(m) is None]
    chosen: dict[str, Mapping[str, Any]] = {}
    problems: list[str] = []
    for selector in selectors:
        matched = [m for m in rows if fnmatch.fnmatchcase(str(m["id"]), selector)]
        agents = [m for m in matched if _why_not_agent(m) is None]
        if not matched:
            problems.append(f"{selector}: no model row has this id or matches it")
        elif not agents and not any(ch in selector for ch in "*?["):
            problems.append(f"{selector}: {_why_not_agent(matched[0])}")
        elif not agents:
            problems.append(f"{selector}: matches only rows that are not agents (e.g. {matched[0]['id']})")
        chosen.update({str(m["id"]): m for m in agents})
    if problems:
        raise DumpSelectionError("provision dump wrote nothing:\n" + "\n".join(f"  {p}" for p in problems))
    return [chosen[k] for k in sorted(chosen)]


def _why_not_agent(row: Mapping[str, Any]) -> str | None:
    ident = str(row["id"])
    if row.get("base_model_id"):
        return (
            f"has a base model ({row['base_model_id']}): a workspace model or a wrapper, which the blueprint "
            "format does not describe"
        )
    if is_managed(row.get("meta")):
        return None
    if not ident.startswith(PREFIX):
        return f"is not served by the agent pipe (its id does not start with {PREFIX}): a plain model row"
    return None


def dump_rows(
    rows: Sequence[Mapping[str, Any]],
    functions: Iterable[Mapping[str, Any]],
    groups: Mapping[str, str],
) -> Dumped:
    """Blueprint files (one per blueprint id), capabilities.yaml and features.yaml for `rows`.

    `functions` are the instance's functions (the pipe's AGENTS valve, the toggle filters);
    `groups` maps group id -> name.
    """
    by_id = {str(f.get("id")): f for f in functions}
    pipe = by_id.get(PIPE_FUNCTION_ID) or {}
    entries = agent_entries((pipe.get("valves") or {}).get("AGENTS"))
    order = {sub: index for index, sub in enumerate(entries)}
    reports: list[RowReport] = []
    blueprints: dict[str, list[tuple[str, Mapping[str, Any], RowReport]]] = {}
    for row in rows:
        ident = str(row["id"])
        blueprint_id, agent_id = _ids(row)
        report = RowReport(ident, f"{blueprint_id}.yaml", is_managed(row.get("meta")))
        reports.append(report)
        if not (_IDENTIFIER.fullmatch(blueprint_id) and _IDENTIFIER.fullmatch(agent_id)):
            report.file = ""
            report.not_expressed.append(
                f"its id is not {PREFIX}<blueprint>.<agent> with ids of lower-case letters, digits, - and _: "
                "a blueprint cannot make a row with this id; not written"
            )
            continue
        blueprints.setdefault(blueprint_id, []).append((agent_id, row, report))
    files: dict[str, bytes] = {}
    capabilities: dict[str, dict[str, Any]] = {}
    features: dict[str, dict[str, Any]] = {}
    for blueprint_id in sorted(blueprints):
        members = sorted(blueprints[blueprint_id], key=lambda m: order.get(f"{blueprint_id}.{m[0]}", len(order)))
        dumped = _blueprint(blueprint_id, members, entries, groups)
        files.update(dumped.icons)
        for name, capability in dumped.capabilities.items():
            capabilities.setdefault(name, capability)
        for feature in dumped.custom_features:
            features.setdefault(feature, _feature(feature, by_id, files, members[0][2]))
        files[f"{blueprint_id}.yaml"] = _yaml(dumped.document)
    if capabilities:
        files["capabilities.yaml"] = _yaml({"capabilities": dict(sorted(capabilities.items()))})
    if features:
        files["features.yaml"] = _yaml({"features": dict(sorted(features.items()))})
    return Dumped(files, reports)


def _ids(row: Mapping[str, Any]) -> tuple[str, str]:
    marker = (row.get("meta") or {}).get(MARKER_KEY)
    if is_managed(row.get("meta")) and isinstance(marker, dict) and marker.get("blueprint") and marker.get("agent"):
        return str(marker["blueprint"]), str(marker["agent"])
    return split_agent_key(agent_of_model(str(row["id"])) or str(row["id"]))


@dataclass
class _Blueprint:
    """One blueprint's document and what it adds to the dump's other files."""

    document: dict[str, Any]
    capabilities: dict[str, dict[str, Any]] = field(default_factory=dict)  # capabilities.yaml entries its step calls
    custom_features: list[str] = field(default_factory=list)  # its toggles that need a features.yaml entry
    icons: dict[str, bytes] = field(default_factory=dict)  # path -> the icon files of its agents


def _blueprint(
    blueprint_id: str,
    members: list[tuple[str, Mapping[str, Any], RowReport]],
    entries: Mapping[str, Mapping[str, Any]],
    groups: Mapping[str, str],
) -> _Blueprint:
    first = members[0][1]
    capabilities: dict[str, dict[str, Any]] = {}
    icons: dict[str, bytes] = {}
    supported = _features(first)
    reads, overrides = _reads_and_overrides(first, supported)
    calls: list[str] = []
    for feature in supported:
        calls.append(feature)
        capabilities.setdefault(feature, {"description": _STUB, "serves": feature})
    for read in reads:
        calls.append(_READ_CAPABILITY[read])
        capabilities.setdefault(_READ_CAPABILITY[read], {"description": _STUB, "reads": [read]})
    if not calls:
        calls.append(_PLAIN_CAPABILITY)
        capabilities.setdefault(_PLAIN_CAPABILITY, {"description": _STUB})
    agents = []
    backends = [entries.get(f"{blueprint_id}.{agent_id}") for agent_id, _row, _r in members]
    base = _backend(backends[0], blueprint_id, members[0][0]) if backends[0] else None
    for (agent_id, row, report), entry in zip(members, backends, strict=True):
        if row is not first:
            if _features(row) != supported or _reads_and_overrides(row, _features(row)) != (reads, overrides):
                report.not_expressed.append(
                    f"its toggles or capabilities differ from {first['id']}'s, and all agents of a blueprint "
                    f"share them: written as {first['id']}'s"
                )
        agents.append(_agent(agent_id, row, report, supported, groups, icons))
        if entry is None:
            report.not_expressed.append(
                "the pipe's AGENTS valve has no backend for it: backend.url is a placeholder to fill in"
            )
            override: dict[str, Any] = {"url": "http://127.0.0.1:8700/FILL-ME-IN"}
        else:
            override = _backend(entry, blueprint_id, agent_id)
        laid = {k: v for k, v in override.items() if base is None or base.get(k) != v}
        for key in (k for k in (base or {}) if k not in override):
            if _BACKEND_DEFAULTS[key] is None:
                report.not_expressed.append(f"backend has no {key} but the blueprint's has: an agent cannot unset it")
            else:
                laid[key] = _BACKEND_DEFAULTS[key]
        if laid:
            agents[-1]["backend"] = laid
        _check_capabilities(row, report)
    document: dict[str, Any] = {
        "id": blueprint_id,
        "name": str(first.get("name") or blueprint_id),
        "description": "",
    }
    if base is not None:
        document["backend"] = base
    if overrides:
        document["openwebui_capabilities"] = overrides
    document["steps"] = [{"id": "work", "description": _STUB, "calls": calls}]
    document["agents"] = agents
    return _Blueprint(document, capabilities, [f for f in supported if not is_native(f)], icons)


_BACKEND_DEFAULTS: dict[str, Any] = {
    "transport": "agui",
    "model": None,
    "api_key_env": None,
    "api_key_from": "sync",
    "insecure": False,
    "identity": "auto",
    "oauth_token_header": None,
}


def _backend(entry: Mapping[str, Any], blueprint_id: str, agent_id: str) -> dict[str, Any]:
    """The blueprint backend for an AGENTS valve entry: only the key's name, never a value."""
    transport = entry.get("transport") or "agui"
    backend: dict[str, Any] = {"transport": transport, "url": entry.get("url")}
    model = entry.get("model")
    if model and not (transport == "openai" and model == f"{blueprint_id}.{agent_id}"):
        backend["model"] = model
    if entry.get("api_key"):
        backend["api_key_env"] = entry["api_key"]
        if entry.get("key_from", "sync") != "sync":
            backend["api_key_from"] = entry["key_from"]
    if entry.get("insecure"):
        backend["insecure"] = True
    if entry.get("identity", "auto") != "auto":
        backend["identity"] = entry["identity"]
    if entry.get("oauth_token_header"):
        backend["oauth_token_header"] = entry["oauth_token_header"]
    return backend


def _features(row: Mapping[str, Any]) -> list[str]:
    """The toggles the row shows: the marker's list on an owned row, else its toggle filters."""
    meta = row.get("meta") or {}
    marker = meta.get(MARKER_KEY)
    if is_managed(meta) and isinstance(marker, dict) and isinstance(marker.get("features"), list):
        return sorted(str(f) for f in marker["features"] if _FEATURE.fullmatch(str(f)))
    found = [
        str(f).removeprefix(TOGGLE_FILTER_PREFIX)
        for f in meta.get("filterIds") or []
        if str(f).startswith(TOGGLE_FILTER_PREFIX)
    ]
    return sorted({f for f in found if _FEATURE.fullmatch(f)})


def _unnamable_toggles(row: Mapping[str, Any]) -> list[str]:
    """The toggles an owned row's marker lists under names no blueprint can give (_features drops them)."""
    meta = row.get("meta") or {}
    marker = meta.get(MARKER_KEY)
    if not (is_managed(meta) and isinstance(marker, dict) and isinstance(marker.get("features"), list)):
        return []
    return [str(f) for f in marker["features"] if not _FEATURE.fullmatch(str(f))]


def _reads_and_overrides(row: Mapping[str, Any], supported: list[str]) -> tuple[list[str], dict[str, bool]]:
    """What the agent reads (from vision/file_upload) and the openwebui_capabilities that give
    the row's other capability values."""
    caps = (row.get("meta") or {}).get("capabilities") or {}
    reads = sorted(
        read for read, keys in READS_CAPABILITIES.items() if all(caps.get(k) is True for k, v in keys.items() if v)
    )
    derived = model_capabilities(supported, None, reads)
    overrides = {
        key: bool(caps[key])
        for key in OVERRIDABLE_DEFAULTS
        if isinstance(caps.get(key), bool) and caps[key] != derived[key]
    }
    return reads, overrides


def _check_capabilities(row: Mapping[str, Any], report: RowReport) -> None:
    """Capabilities the row has on that provision keeps off (a hand-made row: unset counts as on)."""
    caps = (row.get("meta") or {}).get("capabilities") or {}
    on = [key for key in ALWAYS_OFF if caps.get(key, not report.owned) is True]
    if on:
        report.not_expressed.append(
            f"meta.capabilities {', '.join(on)} on: provision keeps them off on its rows "
            "(the agent, not Open WebUI, does that work)"
        )


def _agent(
    agent_id: str,
    row: Mapping[str, Any],
    report: RowReport,
    supported: list[str],
    groups: Mapping[str, str],
    files: dict[str, bytes],
) -> dict[str, Any]:
    meta = row.get("meta") or {}
    agent: dict[str, Any] = {"id": agent_id, "name": str(row.get("name") or agent_id)}
    if meta.get("description"):
        agent["description"] = str(meta["description"])
    icon = _icon(meta.get("profile_image_url"), f"icons/{report.file.removesuffix('.yaml')}.{agent_id}", files, report)
    if icon:
        agent["icon"] = icon
    agent["access"] = _access(row.get("access_grants"), groups, report)
    unnamable = _unnamable_toggles(row)
    if unnamable:
        report.not_expressed.append(
            f"toggles {', '.join(map(repr, unnamable))}: not a toggle name (lower-case letters, digits and _); left out"
        )
    defaults = [str(f).removeprefix(TOGGLE_FILTER_PREFIX) for f in meta.get("defaultFilterIds") or []]
    kept = [f for f in defaults if f in supported]
    if len(kept) < len(defaults):
        report.not_expressed.append(
            f"default toggles {', '.join(sorted(set(defaults) - set(kept)))} are not toggles it shows"
        )
    if kept:
        agent["defaults"] = kept
    if meta.get("defaultFeatureIds"):
        report.not_expressed.append(
            f"meta.defaultFeatureIds {meta['defaultFeatureIds']}: Open WebUI's own toggles are not used on agents"
        )
    ours = {FEATURE_FILTER_ID, *(toggle_filter_id(f) for f in supported)}
    own_filters = [
        str(f)
        for f in meta.get("filterIds") or []
        if str(f) not in ours and not str(f).startswith(TOGGLE_FILTER_PREFIX)
    ]
    if own_filters:
        agent["filters"] = own_filters
        report.not_expressed.append(f"filters {', '.join(own_filters)}: put their files in your functions folder")
    actions = [str(a) for a in meta.get("actionIds") or []]
    if actions:
        agent["actions"] = actions
        report.not_expressed.append(f"actions {', '.join(actions)}: put their files in your functions folder")
    if meta.get("tags") is not None:
        agent["tags"] = [str(t.get("name")) for t in meta["tags"] if isinstance(t, Mapping) and t.get("name")]
    if meta.get("suggestion_prompts") is not None:
        agent["suggestions"] = [_suggestion(s) for s in meta["suggestion_prompts"] if isinstance(s, Mapping)]
    translations = _agent_translations(meta, agent, report)
    if translations:
        agent["i18n"] = translations
    if row.get("is_active") is False:
        report.not_expressed.append("it is switched off (is_active false): provision keeps its rows on")
    return agent


def _locales(meta: Mapping[str, Any], report: RowReport) -> list[tuple[str, Mapping[str, Any]]]:
    """The row's meta.i18n entries under a tag a blueprint can hold; the others are reported."""
    table = meta.get("i18n")
    found: list[tuple[str, Mapping[str, Any]]] = []
    for locale, entry in sorted(table.items(), key=lambda item: str(item[0])) if isinstance(table, Mapping) else []:
        if not isinstance(entry, Mapping):
            continue
        why = locale_problem(str(locale))
        if why:
            report.not_expressed.append(f"translations for {str(locale)[:40]!r}: {why}")
            continue
        found.append((str(locale), entry))
    return found


def _agent_translations(meta: Mapping[str, Any], agent: Mapping[str, Any], report: RowReport) -> dict[str, Any]:
    """meta.i18n as the agent's `i18n`: per locale the name, description and suggestions it holds
    (what Open WebUI 0.12 reads there; the other keys of an entry are not provision's)."""
    translations: dict[str, Any] = {}
    for locale, entry in _locales(meta, report):
        text: dict[str, Any] = {}
        for key in ("name", "description"):
            value = entry.get(key)
            if isinstance(value, str) and value.strip():
                if key == "description" and "description" not in agent:
                    report.not_expressed.append(
                        f"the {locale} description: the row has no description of its own to translate"
                    )
                    continue
                text[key] = value
        prompts = entry.get("suggestion_prompts")
        if isinstance(prompts, list):
            default = agent.get("suggestions")
            if default is None or len(prompts) != len(default):
                report.not_expressed.append(
                    f"the {locale} suggestions: {len(prompts)}, where the row has {len(default or [])} to translate"
                )
            else:
                text["suggestions"] = [_suggestion(p) for p in prompts if isinstance(p, Mapping)]
        if text:
            translations[locale] = text
    return translations


def _suggestion(prompt: Mapping[str, Any]) -> dict[str, str]:
    title = prompt.get("title")
    lines = [str(t) for t in title] if isinstance(title, list) else [str(title or "")]
    suggestion = {"title": lines[0] if lines else ""}
    if len(lines) > 1 and lines[1]:
        suggestion["subtitle"] = lines[1]
    suggestion["prompt"] = str(prompt.get("content") or "")
    return suggestion


def _access(grants: Any, groups: Mapping[str, str], report: RowReport) -> Any:
    names: list[str] = []
    public = False
    for grant in grants if isinstance(grants, list) else []:
        kind, who, permission = (str(grant.get(k, "")) for k in ("principal_type", "principal_id", "permission"))
        if permission != "read":
            report.not_expressed.append(f"a {permission} grant to {kind} {who}: blueprints grant read only")
        elif kind == "user" and who == "*":
            public = True
        elif kind == "group" and who in groups:
            names.append(groups[who])
        elif kind == "group":
            report.not_expressed.append(f"a grant to group id {who}, which no group has")
        else:
            report.not_expressed.append(f"a grant to {kind} {who}: blueprints grant to groups or everyone")
    if public:
        return "public"
    return {"groups": sorted(set(names))} if names else "private"


def _icon(value: Any, stem: str, files: dict[str, bytes], report: RowReport, *, allow_svg: bool = False) -> str | None:
    """An https URL as it is; a data URI as an icon file the loader reads back to the same URI."""
    if not value:
        return None
    text = str(value)
    if text.startswith("data:"):
        try:
            canonical = resolve_icon(text, base_dir=Path("."), allow_svg=allow_svg)
        except ValueError as exc:
            report.not_expressed.append(f"icon: {exc}; left out (the row keeps its icon)")
            return None
        if canonical == text:
            raw = base64.b64decode(text.partition(",")[2])
            path = f"{stem}.{_EXTENSIONS[sniff_image_type(raw) or 'image/png']}"
            files[path] = raw
            return path
        return text
    if text.lower().startswith("https://"):
        return text
    report.not_expressed.append(f"icon {text[:80]}: not an https URL or an image; left out (the row keeps it)")
    return None


def _feature(
    feature: str, functions: Mapping[str, Mapping[str, Any]], files: dict[str, bytes], report: RowReport
) -> dict[str, Any]:
    """The features.yaml entry for a custom toggle, read from its toggle filter on the instance."""
    function = functions.get(toggle_filter_id(feature))
    if function is None:
        report.not_expressed.append(
            f"toggle {feature}: its toggle filter is not on the instance; features.yaml has a stub"
        )
        return {"title": feature.replace("_", " ").capitalize(), "description": _STUB}
    title = str(function.get("name") or feature)
    description = str((function.get("meta") or {}).get("description") or "")
    match = re.search(r"^\s*self\.icon = (.+)$", str(function.get("content") or ""), re.MULTILINE)
    try:
        icon = ast.literal_eval(match.group(1)) if match else None
    except (ValueError, SyntaxError):
        icon = None
    entry: dict[str, Any] = {"title": title, "description": description}
    translations = {
        locale: {
            key: text[source]
            for key, source in (("title", "name"), ("description", "description"))
            if isinstance(text.get(source), str) and text[source].strip() and (key == "title" or description)
        }
        for locale, text in _locales(function.get("meta") or {}, report)
    }
    if any(translations.values()):
        entry["i18n"] = {locale: text for locale, text in translations.items() if text}
    if isinstance(icon, str):
        path = _icon(icon, f"icons/{feature}", files, report, allow_svg=True)
        if path:
            entry["icon"] = path
    if render_toggle_filter(feature=feature, title=title, description=description, icon=icon) != function.get(
        "content"
    ):
        report.not_expressed.append(f"toggle {feature}: its filter was edited; features.yaml renders provision's own")
    return entry


def _yaml(document: Mapping[str, Any]) -> bytes:
    header = "# Written by provision dump. Steps and capabilities are stubs: describe what the agent does.\n"
    body = yaml.safe_dump(dict(document), sort_keys=False, allow_unicode=True, width=100)
    return (header + body).encode("utf-8")


def write_dump(directory: Path, dumped: Dumped, *, force: bool = False) -> list[Path]:
    """Write the files into `directory`. Without `force` an existing file stops it before the
    first write, so a refusal writes nothing; a symlinked directory on the way is never written through."""
    unsafe = [name for name in dumped.files if _unsafe_name(name)]
    if unsafe:
        names = "\n".join(f"  {name!r}" for name in unsafe)
        raise ProvisionError(
            f"provision dump wrote nothing: these names cannot be file names inside {directory}:\n{names}"
        )
    targets = [directory / name for name in dumped.files]
    blocked = blocked_paths(directory, targets)
    if blocked:
        names = "\n".join(f"  {p}: {why}" for p, why in blocked)
        raise ProvisionError(f"provision dump cannot write there, so it wrote nothing:\n{names}")
    existing = [p for p in targets if p.exists() or p.is_symlink()]
    if existing and not force:
        names = "\n".join(f"  {p}" for p in existing)
        raise ProvisionError(
            f"{len(existing)} file(s) already exist; provision dump wrote nothing (--force replaces them):\n{names}"
        )
    made: list[Path] = []
    for path, content in zip(targets, dumped.files.values(), strict=True):
        make_dirs(path.parent, made)
        if path.is_symlink():
            path.unlink()  # --force replaces the link itself, never the file it points to
        path.write_bytes(content)
    return targets


def _unsafe_name(name: str) -> bool:
    """True unless `name` is a relative path of plain parts (letters, digits, _ - .; no part
    starting with a dot): the last check on every name a row's fields made."""
    return not all(_PATH_PART.fullmatch(part) for part in name.split("/"))
