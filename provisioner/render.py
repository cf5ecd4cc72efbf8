"""Plan -> text for people, from the same dict as the JSON form, so the two cannot disagree.

Writes only to the rich Console it is given. Secrets are masked before they get here
(Plan.to_json); control and bidirectional characters in ids, paths and values are printed as
`\\uXXXX` escapes (text.visible), so a name cannot disguise what a reviewer reads in a CI log. A
plan of hundreds of changes stays readable: summary first (and last), one line per object with
its whole id (lines are never wrapped or cut), and for updates one line per changed value:
structured values are shown key by key (`meta.aihub.features`) and entry by entry
(`valves.AGENTS[fleet-17.agent-00].features`), and any other long value is cut to the part that
changed, so a 100 KB valve that differs in one entry never shows as two identical ends.

Layer: output.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from rich.console import Console
from rich.markup import escape

from .redaction import SENSITIVE
from .state import I18N_KEY
from .text import visible

_STYLE = {"create": "green", "update": "yellow", "delete": "red"}
SYMBOL = {"create": "+", "update": "~", "delete": "-"}
MAX_VALUE_CHARS = 80
# What a function created or changed with `global: true` does; every plan form says it.
GLOBAL_NOTE = "global: runs on every model of the instance"
# Characters of unchanged text shown on each side of a change inside a long value.
CONTEXT_CHARS = 24
_ABSENT = object()
# After a changed field: which side moved since the last sync (fingerprint.py); a blueprint change is the default.
ORIGIN_NOTE = {"openwebui": "  (changed in Open WebUI)", "both": "  (changed in the blueprint and in Open WebUI)"}


def summary_line(summary: dict[str, int], groups: list[dict[str, Any]] | None = None) -> str:
    """'Plan: 1 to add, 0 to change, 0 to destroy.', and the groups sync creates or deletes."""
    line = f"Plan: {summary['add']} to add, {summary['change']} to change, {summary['destroy']} to destroy"
    return line + group_suffix(groups or []) + "."


def applied_line(result: dict[str, Any]) -> str:
    """'Applied: 1 added, 0 changed, 0 destroyed.', and the groups sync created or deleted."""
    applied = result["applied"]
    line = f"Applied: {applied['add']} added, {applied['change']} changed, {applied['destroy']} destroyed"
    groups = [(len(names), verb) for verb in ("created", "deleted") if (names := result.get(f"groups_{verb}"))]
    return line + ("; groups: " + ", ".join(f"{n} {verb}" for n, verb in groups) if groups else "") + "."


def group_writes(plan_json: dict[str, Any]) -> list[dict[str, Any]]:
    """The groups sync creates (missing_groups: create) or deletes (--prune): writes, as rows are."""
    return [g for g in plan_json.get("groups") or [] if g.get("action") in ("create", "delete")]


def group_suffix(groups: list[dict[str, Any]]) -> str:
    """'; groups: 1 to create, 1 to delete' (only the kinds there are), or '' with none."""
    counts = [(n, verb) for verb in ("create", "delete") if (n := sum(1 for g in groups if g.get("action") == verb))]
    return "; groups: " + ", ".join(f"{n} to {verb}" for n, verb in counts) if counts else ""


def render_plan(plan_json: dict[str, Any], out: Console) -> None:
    """Summary first, then one line per object and, for updates, one line per changed value."""
    changes = plan_json["changes"]
    groups = group_writes(plan_json)
    if not changes and not groups:
        out.print("No changes. Open WebUI matches the blueprints.", soft_wrap=True)
        return
    out.print(summary_line(plan_json["summary"], groups), soft_wrap=True)
    for line in upgrade_lines(plan_json):
        out.print(escape(line), soft_wrap=True)
    for line in global_lines(plan_json):
        out.print(line, soft_wrap=True, markup=False)
    out.print()
    width = max((len(shown(c["id"])) for c in changes), default=0)
    for change in changes:
        action = change["action"]
        style = _STYLE[action]
        note = "  (managed by provision)" if action == "delete" else ""
        if change.get("upgrade"):
            note = f"  (bundle changed: {upgrade_text(change['upgrade'])})"
        if change.get("global"):
            note += f"  ({GLOBAL_NOTE})"
        out.print(
            f"  [{style}]{SYMBOL[action]}[/{style}] {change['kind']:<9} {shown(change['id']):<{width}}  {action}{note}",
            soft_wrap=True,
        )
        if action != "update":
            continue
        leaves = [leaf for f in change["fields"] for leaf in leaf_changes(f["path"], f["before"], f["after"])]
        leaves, folded = folded_translations(leaves)
        origins = {f["path"]: ORIGIN_NOTE.get(f.get("origin") or "", "") for f in change["fields"]}
        path_width = max((len(shown(path)) for path, _, _ in leaves), default=0)
        for path, before, after in leaves:
            shown_before, shown_after = short_pair(before, after)
            note = next((n for p, n in origins.items() if path == p or path.startswith((p + ".", p + "["))), "")
            out.print(
                f"      [yellow]~[/yellow] {shown(path):<{path_width}}  "
                f"{shown(shown_before)} -> {shown(shown_after)}{note}",
                soft_wrap=True,
            )
        if folded:
            out.print(f"      [yellow]~[/yellow] {escape(folded)}", soft_wrap=True)
    for group in groups:  # the notes (on stderr) say why
        style = _STYLE[group["action"]]
        out.print(
            f"  [{style}]{SYMBOL[group['action']]}[/{style}] {'group':<9} {escape(shown(str(group['name'])))}  {group['action']}",
            soft_wrap=True,
        )
    out.print()
    out.print(summary_line(plan_json["summary"], groups), soft_wrap=True)


# More translated fields than this in one object (a first sync of the bundle's toggles writes
# 120 each): one line says how many, and `-o json` lists every one.
MAX_TRANSLATION_LINES = 12


def folded_translations(leaves: list[tuple[str, Any, Any]]) -> tuple[list[tuple[str, Any, Any]], str | None]:
    """The leaves without the `meta.i18n.*` ones when there are many, and the line that counts them."""
    translated = [leaf for leaf in leaves if leaf[0].startswith(I18N_KEY + ".")]
    if len(translated) <= MAX_TRANSLATION_LINES:
        return leaves, None
    locales = {path.split(".")[2] for path, _, _ in translated}
    line = f"{I18N_KEY}  {len(translated)} translated fields in {len(locales)} languages change (-o json lists each)"
    return [leaf for leaf in leaves if not leaf[0].startswith(I18N_KEY + ".")], line


def render_notes(plan_json: dict[str, Any], err: Console) -> None:
    """The plan's notes, only when it changes something or a group is missing (a clean diff stays quiet)."""
    if plan_json["changes"] or plan_json.get("groups"):
        for note in plan_json.get("notes") or []:
            err.print(f"Note: {note}", soft_wrap=True, markup=False)


def upgrade_text(upgrade: dict[str, Any]) -> str:
    """'provision 0.1.0 on the instance -> 0.2.0 installed'."""
    before = f"provision {upgrade['from']}" if upgrade.get("from") else "an earlier provision"
    return f"{before} on the instance -> {upgrade['to']} installed"


def upgrade_lines(plan_json: dict[str, Any]) -> list[str]:
    """After an upgrade of provision: which bundle functions it changes, and between which versions."""
    by_versions: dict[tuple[Any, Any], list[str]] = {}
    for change in plan_json["changes"]:
        if change.get("upgrade"):
            key = (change["upgrade"].get("from"), change["upgrade"]["to"])
            by_versions.setdefault(key, []).append(change["id"])
    return [
        f"Upgrade: {', '.join(ids)} changed between {upgrade_text({'from': old, 'to': new})}."
        for (old, new), ids in by_versions.items()
    ]


def global_lines(plan_json: dict[str, Any]) -> list[str]:
    """A function the plan creates or changes with `global: true` runs on every model: say so up front."""
    ids = [visible(c["id"]) for c in plan_json["changes"] if c.get("global")]
    if not ids:
        return []
    verb = "runs" if len(ids) == 1 else "run"
    return [f"Global: {', '.join(ids)} {verb} on every model of the instance (global: true)."]


def render_orphans(plan_json: dict[str, Any], err: Console) -> None:
    orphans = plan_json.get("orphans") or []
    if not orphans:
        return
    err.print(
        f"Note: {len(orphans)} managed object(s) are no longer in the blueprints and are kept; "
        "`--prune` would delete them:",
        soft_wrap=True,
    )
    for item in orphans:
        note = f"  ({shown(item['note'])})" if item.get("note") else ""
        err.print(f"  {item['kind']} {shown(item['id'])}{note}", soft_wrap=True)


def shown(text: str) -> str:
    """Text as a reader may see it: hidden characters (U+202E, NUL, ESC) as escapes, no markup."""
    return escape(visible(text))


def leaf_changes(path: str, before: Any, after: Any) -> Iterator[tuple[str, Any, Any]]:
    """(path, before, after) for each differing value, descending where both sides have structure.

    Dicts are compared key by key (`meta.aihub.features`); lists of objects with unique `id`s
    entry by entry (`valves.AGENTS[fleet-17.agent-00].features`); a long string holding JSON
    (the pipe's AGENTS valve) as that JSON. A key on one side only shows `(absent)` on the other.
    """
    parsed_before, parsed_after = _json_in(before), _json_in(after)
    if parsed_before is not None and parsed_after is not None:
        before, after = parsed_before, parsed_after
    keyed_before, keyed_after = _keyed(before), _keyed(after)
    if keyed_before is None or keyed_after is None:
        yield path, before, after
        return
    for key in [*keyed_before, *(k for k in keyed_after if k not in keyed_before)]:
        b, a = keyed_before.get(key, _ABSENT), keyed_after.get(key, _ABSENT)
        if b != a:
            yield from leaf_changes(path + key, b, a)


def _json_in(value: Any) -> Any:
    """The dict or list a long JSON string holds, else None."""
    if not (isinstance(value, str) and len(value) > MAX_VALUE_CHARS and value[:1] in "[{"):
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    return parsed if isinstance(parsed, (dict, list)) else None


def _keyed(value: Any) -> dict[str, Any] | None:
    """A non-empty dict as {".key": value}; a list of objects with unique ids as {"[id]": entry}."""
    if isinstance(value, dict) and value:
        return {f".{key}": item for key, item in value.items()}
    if isinstance(value, list) and value and all(isinstance(e, dict) and isinstance(e.get("id"), str) for e in value):
        keyed = {f"[{e['id']}]": e for e in value}
        return keyed if len(keyed) == len(value) else None
    return None


def short_pair(before: Any, after: Any) -> tuple[str, str]:
    """Both sides of a change; when long, each cut to the span that differs plus some context."""
    b, a = _text(before), _text(after)
    if (
        (len(b) <= MAX_VALUE_CHARS and len(a) <= MAX_VALUE_CHARS)
        or before is _ABSENT
        or after is _ABSENT
        or before is None
        or after is None
    ):
        return _cut_middle(b), _cut_middle(a)
    prefix = 0
    limit = min(len(a), len(b))
    while prefix < limit and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    return _window(b, prefix, len(b) - suffix), _window(a, prefix, len(a) - suffix)


def _text(value: Any) -> str:
    if value is _ABSENT:
        return "(absent)"
    if isinstance(value, str) and (value.startswith("sha256:") or value == SENSITIVE):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _cut_middle(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    if len(text) <= limit:
        return text
    keep = (limit - 1) // 2
    return text[:keep] + "…" + text[-keep:]


def _window(text: str, start: int, end: int) -> str:
    """text[start:end] with CONTEXT_CHARS either side, `…` where cut; the changed span is itself
    cut in the middle when longer than MAX_VALUE_CHARS."""
    lo, hi = max(0, start - CONTEXT_CHARS), min(len(text), end + CONTEXT_CHARS)
    shown = text[lo:start] + _cut_middle(text[start:end]) + text[end:hi]
    return ("…" if lo > 0 else "") + shown + ("…" if hi < len(text) else "")


def render_wrappers(wrappers: list[dict[str, Any]], err: Console) -> None:
    """The warning about workspace models that wrap an agent (wrappers.py finds them), on stderr."""
    if not wrappers:
        return
    err.print(
        f"Warning: {len(wrappers)} workspace model(s) wrap an agent. The feature filter does not run "
        "for them, so Open WebUI's own toggles are not stripped and the agent gets no toggles from "
        'them (docs/features.md, "Models that wrap an agent"):',
        soft_wrap=True,
    )
    for w in wrappers:
        err.print(
            f"  model {shown(w['id'])} (owner: {shown(w['owner'])}) wraps {shown(w['base_model_id'])}",
            soft_wrap=True,
        )
