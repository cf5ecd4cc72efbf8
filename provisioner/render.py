"""Plan -> text for people, from the same dict as the JSON form, so the two cannot disagree.

Writes only to the rich Console it is given. Secrets are masked before they get here
(Plan.to_json), long values are shortened so a 500-change plan stays readable.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape

_STYLE = {"create": "green", "update": "yellow", "delete": "red"}
_SYMBOL = {"create": "+", "update": "~", "delete": "-"}
MAX_VALUE_CHARS = 80


def summary_line(summary: dict[str, int]) -> str:
    return (
        f"Plan: {summary['add']} to add, {summary['change']} to change, "
        f"{summary['destroy']} to destroy."
    )


def render_plan(plan_json: dict[str, Any], out: Console) -> None:
    """Summary first, then one line per object and, for updates, one line per changed field."""
    changes = plan_json["changes"]
    if not changes:
        out.print("No changes. Open WebUI matches the blueprints.", soft_wrap=True)
        return
    out.print(summary_line(plan_json["summary"]), soft_wrap=True)
    out.print()
    width = max(len(c["id"]) for c in changes)
    for change in changes:
        action = change["action"]
        style = _STYLE[action]
        note = "  (managed by provision)" if action == "delete" else ""
        out.print(
            f"  [{style}]{_SYMBOL[action]}[/{style}] {change['kind']:<9} "
            f"{escape(change['id']):<{width}}  {action}{note}",
            soft_wrap=True,
        )
        if action != "update":
            continue
        path_width = max(len(f["path"]) for f in change["fields"])
        for field in change["fields"]:
            out.print(
                f"      [yellow]~[/yellow] {escape(field['path']):<{path_width}}  "
                f"{escape(short(field['before']))} -> {escape(short(field['after']))}",
                soft_wrap=True,
            )
    out.print()
    out.print(summary_line(plan_json["summary"]), soft_wrap=True)


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
        err.print(f"  {item['kind']} {escape(item['id'])}", soft_wrap=True)


def short(value: Any) -> str:
    """A value as compact JSON, shortened in the middle when long (data URIs, content)."""
    text = value if isinstance(value, str) and value.startswith("sha256:") else json.dumps(
        value, ensure_ascii=False, separators=(", ", ": ")
    )
    if len(text) > MAX_VALUE_CHARS:
        keep = (MAX_VALUE_CHARS - 1) // 2
        text = text[:keep] + "…" + text[-keep:]
    return text
