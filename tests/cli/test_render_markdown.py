"""`-o markdown`: golden output for the plan forms a pull request shows, and the CLI wiring.

Regenerate a golden file after a deliberate change with `UPDATE_GOLDEN=1 scripts/test
tests/cli/test_render_markdown.py`, and read the diff before committing it.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from provisioner.render_markdown import render_markdown, result_markdown
from tests.support.builders import REPO
from tests.support.fake_owui import FakeOpenWebUI
from tests.support.run_cli import run_cli as run

GOLDEN = REPO / "tests" / "data" / "markdown"
TOKEN = "sk-markdown-test-token-0123456789"
SAMPLES = ["-p", str(REPO / "blueprints"), "--bundle", str(REPO / "owui_functions")]

SMALL: dict[str, Any] = {
    "format_version": "1",
    "summary": {"add": 1, "change": 3, "destroy": 1},
    "changes": [
        {
            "kind": "function",
            "id": "aihub_agent_pipe",
            "action": "update",
            "fields": [
                {"path": "content", "before": "sha256:1a2b3c4d5e6f", "after": "sha256:9f8e7d6c5b4a"},
                {"path": "valves.API_KEYS", "before": "(sensitive)", "after": "(sensitive)"},
            ],
            "upgrade": {"from": "0.1.0", "to": "0.2.0"},
        },
        {
            "kind": "function",
            "id": "pii|redact",
            "action": "update",
            "fields": [{"path": "meta.description", "before": "Masks `e-mail`", "after": "Masks e-mail | phone"}],
        },
        {"kind": "model", "id": "aihub_agent_pipe.support-desk.billing", "action": "create", "fields": []},
        {
            "kind": "model",
            "id": "aihub_agent_pipe.policy-faq.default",
            "action": "update",
            "fields": [
                {"path": "meta.capabilities.web_search", "before": True, "after": False},
                {
                    "path": "meta.aihub",
                    "before": {"managed_by": "aihub-provision", "features": []},
                    "after": {"managed_by": "aihub-provision", "features": ["web_search"]},
                },
            ],
        },
        {"kind": "model", "id": "aihub_agent_pipe.old.agent", "action": "delete", "fields": []},
    ],
    "orphans": [],
}


def _long() -> dict[str, Any]:
    changes = [
        {
            "kind": "model",
            "id": f"aihub_agent_pipe.fleet.agent-{i:02}",
            "action": "update",
            "fields": [{"path": "meta.description", "before": f"old {i}", "after": f"new {i}"}],
        }
        for i in range(12)
    ]
    return {
        "format_version": "1",
        "summary": {"add": 0, "change": 12, "destroy": 0},
        "changes": changes,
        "orphans": [{"kind": "model", "id": "aihub_agent_pipe.gone.agent"}],
    }


EMPTY: dict[str, Any] = {
    "format_version": "1",
    "summary": {"add": 0, "change": 0, "destroy": 0},
    "changes": [],
    "orphans": [],
}


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"differs from {path}"


@pytest.mark.parametrize(
    "name, plan, target",
    [
        ("small.md", SMALL, "staging"),
        ("long.md", _long(), None),
        ("empty.md", EMPTY, None),
    ],
)
def test_markdown_matches_golden(name: str, plan: dict[str, Any], target: str | None) -> None:
    _check(name, render_markdown(plan, target=target))


def test_small_plan_is_open_and_long_plan_collapsed() -> None:
    small, long = render_markdown(SMALL), render_markdown(_long())
    assert "<details>" not in small
    assert long.count("<details>") == 2 and long.index("**Plan: 0 to add, 12 to change") < long.index("<details>")


def test_pipes_in_values_cannot_break_a_table() -> None:
    """Every row has as many cells as its table's header (an escaped "\\|" is not a separator);
    SMALL has a "|" in an id and in a value. Masking secrets is test_secrets.py's."""
    text = render_markdown(SMALL)
    assert "pii\\|redact" in text and "e-mail \\| phone" in text
    width = 0
    for line in text.splitlines():
        if not line.startswith("|"):
            width = 0
            continue
        cells = len(line.replace("\\|", "").strip().strip("|").split("|"))
        width = width or cells  # the header row
        assert cells == width, line


def test_result_markdown_lists_failures() -> None:
    result = {
        "applied": {"add": 1, "change": 0, "destroy": 0},
        "failed": [{"kind": "model", "id": "m", "action": "update", "error": "Open WebUI answered 500"}],
        "not_attempted": [{"kind": "model", "id": "n", "action": "delete"}],
    }
    _check("result.md", result_markdown(result))


def test_diff_and_sync_print_markdown(capsys, fake: FakeOpenWebUI) -> None:
    code, out, _ = run(capsys, "diff", *SAMPLES, "-o", "markdown", "--detailed-exitcode")
    assert code == 2
    assert (
        out.startswith("### provision plan\n\n**Plan: ")
        and "| + | model | `aihub_agent_pipe.policy-faq.default` | create |" in out
    )
    code, out, _ = run(capsys, "sync", *SAMPLES, "-o", "markdown", "--yes")
    assert code == 0 and out.startswith("### provision plan\n") and "**Applied: " in out
    code, out, _ = run(capsys, "sync", *SAMPLES, "-o", "markdown")
    assert code == 0 and "**No changes.**" in out


def test_sync_json_prints_plan_and_result_even_with_nothing_to_change(capsys, fake: FakeOpenWebUI) -> None:
    assert run(capsys, "sync", *SAMPLES, "--yes")[0] == 0
    code, out, _ = run(capsys, "sync", *SAMPLES, "-o", "json")
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"plan", "result"} and data["plan"]["changes"] == []
    assert data["result"]["applied"] == {"add": 0, "change": 0, "destroy": 0} and data["result"]["failed"] == []


def test_validate_does_not_take_markdown(capsys) -> None:
    code, _, err = run(capsys, "validate", *SAMPLES, "-o", "markdown")
    assert code == 1 and "markdown" in err
