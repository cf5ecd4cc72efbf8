"""Plan -> GitHub-flavoured Markdown, for a pull-request comment or $GITHUB_STEP_SUMMARY.

Reads the same dict as the JSON form and the text renderer (secrets are already masked there).
Summary first, then a table with one row per object, then the changed fields of each updated
object. A long plan collapses its details in `<details>` so the comment stays short.

Every value from the blueprints or the instance (ids, field values, versions, error texts) is
an inline code span fenced by a backtick run longer than any inside it, so no text can end the
span and become Markdown or HTML (an image, a link, a mention, a closed `<details>`) in GitHub.

Layer: output.
"""

from __future__ import annotations

import re
from typing import Any

from .render import (
    GLOBAL_NOTE,
    SYMBOL,
    applied_line,
    folded_translations,
    group_writes,
    leaf_changes,
    short_pair,
    summary_line,
)
from .text import visible

# More objects than this, or more changed fields than MAX_OPEN_FIELDS: details start collapsed.
MAX_OPEN_ROWS = 10
MAX_OPEN_FIELDS = 20


def render_markdown(plan_json: dict[str, Any], title: str = "provision plan", target: str | None = None) -> str:
    """The whole plan as Markdown text, ending with a newline; the heading names `target` if given."""
    changes = plan_json["changes"]
    heading = _html(title) + (f" for target {_code(target)}" if target else "")
    lines = [f"### {heading}", ""]
    groups = group_writes(plan_json)
    if not changes and not groups:
        lines += ["**No changes.** Open WebUI matches the blueprints.", ""]
        lines += _orphans(plan_json)
        return "\n".join(lines)
    lines += [f"**{summary_line(plan_json['summary'], groups)}**", ""]
    if groups:
        lines += [f"- {SYMBOL[g['action']]} group {_code(str(g['name']))}: {g['action']}" for g in groups] + [""]
    if not changes:
        lines += _orphans(plan_json)
        return "\n".join(lines)
    upgraded = [c for c in changes if c.get("upgrade")]
    if upgraded:
        ids = ", ".join(_code(c["id"]) for c in upgraded)
        lines += [f"> Upgrade: the installed provision changes {ids}.", ""]
    everywhere = [c for c in changes if c.get("global")]
    if everywhere:
        ids = ", ".join(_code(c["id"]) for c in everywhere)
        lines += [
            f"> **Global:** {ids} {'runs' if len(everywhere) == 1 else 'run'} on every model of the instance "
            "(`global: true`).",
            "",
        ]

    table = ["| | kind | id | action |", "|---|---|---|---|"]
    for change in changes:
        note = ""
        if change["action"] == "delete":
            note = " (managed by provision)"
        elif change.get("upgrade"):
            note = f" (bundle changed: {_upgrade(change['upgrade'])})"
        if change.get("global"):
            note += f" ({GLOBAL_NOTE})"
        table.append(
            f"| {SYMBOL[change['action']]} | {change['kind']} | {_code(change['id'], cell=True)} | {change['action']}{note} |"
        )
    lines += _collapsible(f"{len(changes)} objects", table, open_=len(changes) <= MAX_OPEN_ROWS)

    sections: list[str] = []
    field_count = 0
    for change in changes:
        if change["action"] != "update":
            continue
        leaves = [leaf for f in change["fields"] for leaf in leaf_changes(f["path"], f["before"], f["after"])]
        field_count += len(leaves)
        sections += [f"#### {change['kind']} {_code(change['id'])}", "", "| field | before | after |", "|---|---|---|"]
        leaves, folded = folded_translations(leaves)  # as the text plan: one row counts many translations
        for path, before, after in leaves:
            shown_before, shown_after = short_pair(before, after)
            sections.append(
                f"| {_code(path, cell=True)} | {_code(shown_before, cell=True)} | {_code(shown_after, cell=True)} |"
            )
        if folded:
            field, count = folded.split("  ", 1)
            sections.append(f"| {_code(field + '.*', cell=True)} | | {_html(count)} |")
        sections.append("")
    if sections:
        updated = sum(1 for c in changes if c["action"] == "update")
        label = f"Field changes: {field_count} in {updated} updated object{'s' if updated != 1 else ''}"
        open_ = len(changes) <= MAX_OPEN_ROWS and field_count <= MAX_OPEN_FIELDS
        lines += _collapsible(label, sections, open_=open_)
    lines += _orphans(plan_json)
    return "\n".join(lines)


def _upgrade(upgrade: dict[str, Any]) -> str:
    """Both versions, as code: the one on the instance is whatever an admin could write there."""
    before = f"provision {_code(str(upgrade['from']), cell=True)}" if upgrade.get("from") else "an earlier provision"
    return f"{before} on the instance -> {_code(str(upgrade['to']), cell=True)} installed"


def _collapsible(label: str, body: list[str], *, open_: bool) -> list[str]:
    """`body` as it is when short; inside a closed <details> when long."""
    while body and body[-1] == "":
        body = body[:-1]
    if open_:
        return [*body, ""]
    return ["<details>", f"<summary>{_html(label)}</summary>", "", *body, "", "</details>", ""]


def _orphans(plan_json: dict[str, Any]) -> list[str]:
    orphans = plan_json.get("orphans") or []
    if not orphans:
        return []
    lines = [
        f"{len(orphans)} managed object(s) are no longer in the blueprints and are kept; `--prune` would delete them:",
        "",
    ]
    lines += [f"- {o['kind']} {_code(o['id'])}" for o in orphans]
    return [*lines, ""]


def result_markdown(result: dict[str, Any]) -> str:
    """What sync applied, after the plan."""
    lines = [f"**{applied_line(result)}**", ""]
    if result.get("stopped_by"):
        lines += [f"Stopped part-way by {_code(result['stopped_by'])}: run `provision sync` again to finish.", ""]
    for failure in result.get("failed") or []:
        lines.append(
            f"- failed: {failure['kind']} {_code(failure['id'])} ({failure['action']}): {_code(failure['error'])}"
        )
    failed = {(f["kind"], f["id"]) for f in result.get("failed") or []}
    for conflict in result.get("conflicts") or []:  # another writer's change (apply.py, conflicts.py)
        if (conflict["kind"], conflict["id"]) not in failed:
            lines.append(f"- conflict: {_code(conflict['message'])}")
    for skipped in result.get("not_attempted") or []:
        lines.append(f"- not attempted: {skipped['kind']} {_code(skipped['id'])} ({skipped['action']})")
    return "\n".join(lines) + "\n"


def _code(text: str, *, cell: bool = False) -> str:
    """`text` as one inline code span that no character in it can end (CommonMark: the fence is a
    backtick run longer than any inside; a space pads text that starts or ends with a backtick or
    a space). `cell`: inside a table row, where `|` must be escaped (GFM honours `\\|` in code spans)."""
    shown = _one_line(text)
    if not shown:
        return "<code></code>"
    fence = "`" * (max((len(run) for run in re.findall("`+", shown)), default=0) + 1)
    pad = " " if shown[0] in "` " or shown[-1] in "` " else ""
    if not shown.strip(" "):
        pad = ""  # all spaces: CommonMark strips nothing
    if cell:
        shown = shown.replace("|", "\\|")
    return f"{fence}{pad}{shown}{pad}{fence}"


def _one_line(text: str) -> str:
    """One line, with control or bidirectional characters (U+202E, NUL, ESC) shown as escapes
    (text.visible): a line break would end the table row or the list item."""
    return visible(text, keep="\r\n").replace("\r", " ").replace("\n", " ")


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
