"""Drift -> text and Markdown: the "Changed in Open WebUI" part of a plan, and `provision drift`.

Reads the same dicts as the JSON forms (plan_json["drift"], drift.drift_report). Names and
emails come from the instance, so they are escaped like every other value an admin could write.

Layer: output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console

from .render import shown
from .render_markdown import _code, _html

NO_HISTORY = "Open WebUI keeps no version history before 0.12: who made the change is not known"
NOT_IN_HISTORY = "not in Open WebUI's version history"


def author_text(changed_by: Mapping[str, Any] | None, *, history: bool) -> str:
    """`by Alice <alice@example.com>, 2026-12-02 07:10 UTC`, or why no name is known."""
    if not changed_by:
        return f"changed in Open WebUI ({NOT_IN_HISTORY if history else 'no name: ' + NO_HISTORY})"
    who = changed_by.get("name") or "an unknown user"
    if changed_by.get("email"):
        who += f" <{changed_by['email']}>"
    at = f", {changed_by['at_text']}" if changed_by.get("at_text") else ""
    return f"changed in Open WebUI by {who}{at}"


def render_drift_text(entries: Sequence[Mapping[str, Any]], out: Console, *, heading: str) -> None:
    """One line per object, one per changed field with who and when."""
    if not entries:
        return
    if heading:
        out.print(heading, soft_wrap=True, markup=False)
    for entry in entries:
        out.print(f"  ~ {entry['kind']:<9} {shown(entry['id'])}", soft_wrap=True)
        width = max(len(shown(f["path"])) for f in entry["fields"])
        for f in entry["fields"]:
            text = author_text(f["changed_by"], history=entry.get("history", False))
            out.print(f"      {shown(f['path']):<{width}}  {shown(text)}", soft_wrap=True)


def drift_markdown(entries: Sequence[Mapping[str, Any]], *, title: str | None = None) -> str:
    """The "Changed in Open WebUI" section: a table of object, field, who and when."""
    if not entries:
        return ""
    lines = [f"### {_html(title)}", ""] if title else []
    lines += ["#### Changed in Open WebUI", ""]
    lines += ["| object | field | changed by | when |", "|---|---|---|---|"]
    for entry in entries:
        for f in entry["fields"]:
            by = f.get("changed_by")
            if by:
                who = _code(
                    str(by.get("name") or "unknown") + (f" <{by['email']}>" if by.get("email") else ""), cell=True
                )
                at = by.get("at_text") or ""
            else:
                who = NOT_IN_HISTORY if entry.get("history") else "not known (no history before 0.12)"
                at = ""
            lines.append(
                f"| {entry['kind']} {_code(entry['id'], cell=True)} | {_code(f['path'], cell=True)} | {who} | {at} |"
            )
    return "\n".join([*lines, ""]) + "\n"


def render_drift_report(
    report: Mapping[str, Any], out: Console, err: Console, *, markdown: bool, target: str | None = None
) -> None:
    """`provision drift` for people (text) or a job summary (Markdown); notes go to stderr."""
    entries = report["drift"]
    title = f"provision drift for target {target}" if target else "provision drift"
    if markdown:
        import sys

        if entries:
            sys.stdout.write(drift_markdown(entries, title=title))
        else:
            sys.stdout.write(f"### {_html(title)}\n\n**No drift.** Open WebUI holds what the last sync wrote.\n")
    elif entries:
        count = sum(len(e["fields"]) for e in entries)
        out.print(
            f"Drift: {count} field(s) in {len(entries)} object(s) changed in Open WebUI since the last sync.",
            soft_wrap=True,
        )
        render_drift_text(entries, out, heading="")
        out.print(
            "`provision sync` puts the blueprints' values back; change the blueprints to keep an edit.",
            soft_wrap=True,
            markup=False,
        )
    else:
        out.print("No drift. Open WebUI holds what the last sync wrote.", soft_wrap=True)
    untracked = report.get("untracked") or []
    if untracked:
        err.print(
            f"Note: {len(untracked)} managed object(s) carry no fingerprint yet (written before provision recorded "
            "one); drift cannot tell what changed on them until a sync writes them again.",
            soft_wrap=True,
            markup=False,
        )
