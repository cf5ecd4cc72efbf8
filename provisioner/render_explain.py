"""`provision explain` as text: the dict explain.explain_agent made, for a reader.

Values from the instance (ids and names of wrappers, group names) go through `shown`, so a
control character or a bidirectional override in them cannot hide anything.

Layer: output.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from .render import shown


def _at(where: dict[str, Any]) -> str:
    return f"{where['file']}:{where['line']}" if where.get("line") else str(where["file"])


def explain_lines(explained: dict[str, Any]) -> list[str]:
    """The explanation, one printed line per entry."""
    lines = [
        f"Agent {explained['agent']} ({explained['name']}), model {explained['model_id']}",
        f"  defined at {_at(explained)}",
    ]
    if "instance" in explained:  # what is wrong now comes first
        lines += ["", f"On the instance{' (target ' + explained['target'] + ')' if explained.get('target') else ''}:"]
        for note in explained["instance"]:
            lines.append(f"  - {shown(note['note'])}")
            if note.get("fix"):
                lines.append(f"    fix: {shown(note['fix'])}")
        if not explained["instance"]:
            lines.append("  nothing changes what the blueprints say")
    lines += ["", f"Toggles it shows ({len(explained['toggles'])}):"]
    for toggle in explained["toggles"]:
        kind = "native" if toggle["native"] else "custom"
        default = "; on in a new chat" if toggle["on_by_default"] else ""
        lines.append(f"  {toggle['title']} ({toggle['feature']}, {kind}; filter {toggle['filter']}{default})")
        for source in toggle["served_by"]:
            lines.append(f"    served by capability {source['capability']} ({_at(source['at'])})")
            lines += [f"      called by step {step['step']} ({_at(step)})" for step in source["steps"]]
    if not explained["toggles"]:
        lines.append("  none: no step of its blueprint calls a capability that serves a feature")
    lines += ["", f"Not shown ({len(explained['not_shown'])}):"]
    lines += [f"  {item['title']} ({item['feature']}): {item['why']}" for item in explained["not_shown"]]
    if not explained["not_shown"]:
        lines.append("  none: it shows every feature of the catalog")
    row = explained["row"]
    lines += ["", "The row:"]
    lines.append("  meta.capabilities:")
    width = max(len(key) for key in row["meta.capabilities"])
    for key, value in row["meta.capabilities"].items():
        lines.append(f"    {key:<{width}}  {'true ' if value else 'false'}  {row['why_capabilities'][key]}")
    for field in ("meta.filterIds", "meta.defaultFilterIds", "meta.actionIds"):
        lines.append(f"  {field}: {', '.join(row[field]) or '(none)'}")
    lines.append(f"  who may see it: {row['access']}")
    return lines


def render_explain(explained: dict[str, Any], out: Console) -> None:
    for line in explain_lines(explained):
        out.print(line, soft_wrap=True, markup=False)
