"""`provision doctor`'s report as text and as Markdown, from the same dict as `-o json`.

One line per check, failures first, each with its fix; then one summary line. The Markdown is
for a CI job summary, like the plan's: every finding is one code span (render_markdown._code),
so nothing an instance holds (a wrapper's id, a group's name) renders as Markdown or HTML.

Layer: output.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from .render import shown
from .render_markdown import _code, _html

LABEL = {"fail": "FAIL", "warn": "WARN", "pass": "ok", "skip": "skip"}


def summary_text(summary: dict[str, int]) -> str:
    parts = [
        f"{summary['fail']} failed",
        f"{summary['warn']} warning{'s' if summary['warn'] != 1 else ''}",
        f"{summary['pass']} passed",
    ]
    if summary["skip"]:
        parts.append(f"{summary['skip']} skipped")
    return "Doctor: " + ", ".join(parts) + "."


def render_doctor(report: dict[str, Any], out: Console) -> None:
    """Each check on its line; a fix once under the last of a run of findings it is the fix of
    (six agents on one stopped backend are six lines and one fix)."""
    checks = report["checks"]
    width = max((len(c["id"]) for c in checks), default=0)
    for index, check in enumerate(checks):
        out.print(f"{LABEL[check['status']]:<4}  {check['id']:<{width}}  {shown(check['message'])}", soft_wrap=True)
        following = checks[index + 1] if index + 1 < len(checks) else None
        if check.get("fix") and check["status"] in ("fail", "warn", "skip") and not _same_fix(check, following):
            out.print(f"{'':<4}  {'':<{width}}  fix: {shown(check['fix'])}", soft_wrap=True)
    out.print("")
    out.print(summary_text(report["summary"]), soft_wrap=True)


def _same_fix(check: dict[str, Any], following: dict[str, Any] | None) -> bool:
    return following is not None and all(following.get(k) == check.get(k) for k in ("status", "id", "fix"))


def doctor_markdown(report: dict[str, Any]) -> str:
    target = report.get("target")
    heading = "provision doctor" + (f" for target {_code(target)}" if target else "")
    lines = [f"### {heading}", "", f"**{_html(summary_text(report['summary']))}**", ""]
    lines += ["| | check | finding | fix |", "|---|---|---|---|"]
    for check in report["checks"]:
        fix = _code(check["fix"], cell=True) if check.get("fix") and check["status"] != "pass" else ""
        lines.append(
            f"| {LABEL[check['status']]} | {_code(check['id'], cell=True)} | {_code(check['message'], cell=True)} | {fix} |"
        )
    return "\n".join(lines) + "\n"
