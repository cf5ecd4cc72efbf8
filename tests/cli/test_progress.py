"""Output at scale: the sync progress bar (stderr, terminals only, never with -o json) and a plan
of hundreds of changes that stays readable (summary first, one line per object, whole ids)."""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import respx
from rich.console import Console

from provisioner.cli import main
from provisioner.progress import MIN_CHANGES_FOR_BAR
from provisioner.render import MAX_VALUE_CHARS, render_plan
from tests.support.builders import blueprint, write_blueprint_dir, write_function_dir
from tests.support.fake_owui import FakeOpenWebUI
from tests.support.run_cli import admin_tokens
from tests.support.run_cli import run_cli as run

TOKEN = "sk-progress-test-token-0123456789"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class TerminalStream(io.StringIO):
    """A stderr that says it is a terminal, as an interactive shell's is."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenWebUI]:
    server = FakeOpenWebUI(base_url="http://127.0.0.1:9")
    monkeypatch.setenv("OPENWEBUI_URL", server.base_url)
    monkeypatch.setenv("OPENWEBUI_TOKEN", TOKEN)
    monkeypatch.setenv("TERM", "xterm-256color")
    for name in ("OPENWEBUI_TOKEN_FILE", "CI", "FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    with respx.mock(assert_all_called=False) as router:
        server.mount(router)
        yield server


def bundle(tmp_path: Path, agents: int) -> list[str]:
    """One blueprint with `agents` public agents, and its function bundle."""
    roster = [{"id": f"a{i:03d}", "name": f"Agent {i}", "access": "public"} for i in range(agents)]
    root = write_blueprint_dir(tmp_path / "bp", [blueprint("fleet", agents=roster)])
    return ["-p", str(root), "--bundle", str(write_function_dir(tmp_path / "fn", root))]


def sync(capsys: pytest.CaptureFixture[str], stderr: io.StringIO, *args: str) -> tuple[int, str, str]:
    """`provision sync --yes <args>` with the given stderr stream; (exit code, stdout, stderr)."""
    with contextlib.redirect_stderr(stderr):  # a stream of the test's choosing, so not run_cli's capsys
        code = main(["sync", "--yes", *args])
    out, err = capsys.readouterr().out, stderr.getvalue()
    assert not any(token in out + err for token in admin_tokens()), "the admin token was printed"
    return code, out, err


def test_a_long_sync_shows_a_bar_on_a_terminal_stderr_and_erases_it(capsys, fake, tmp_path: Path) -> None:
    args = bundle(tmp_path, 12)
    code, out, err = sync(capsys, TerminalStream(), *args)
    total = 12 + len(fake.functions)
    assert code == 0 and f"Applied: {total} added" in out
    assert "Applying" in err and f"{total}/{total}" in err
    assert "aihub_agent_pipe.fleet.a0" in err  # the bar names the object it is on
    assert "Applying" not in out and not ANSI.search(out)  # stdout: the plan and the result only


def test_no_bar_when_stderr_is_not_a_terminal(capsys, fake, tmp_path: Path) -> None:
    code, out, err = sync(capsys, io.StringIO(), *bundle(tmp_path, 12))
    assert code == 0 and "Applied: " in out
    assert err == ""


def test_no_bar_with_json_output_even_on_a_terminal(capsys, fake, tmp_path: Path) -> None:
    code, out, err = sync(capsys, TerminalStream(), *bundle(tmp_path, 12), "-o", "json")
    assert code == 0 and err == ""
    result = json.loads(out)["result"]  # stdout is exactly one JSON document
    assert result["applied"]["add"] == 12 + len(fake.functions)


def test_no_bar_on_a_dumb_terminal(capsys, fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "dumb")
    code, _, err = sync(capsys, TerminalStream(), *bundle(tmp_path, 12))
    assert code == 0 and "Applying" not in err


def test_a_short_sync_shows_no_bar(capsys, fake, tmp_path: Path) -> None:
    args = bundle(tmp_path, 1)
    assert 1 + 2 < MIN_CHANGES_FOR_BAR  # one agent, the feature filter and one toggle filter
    code, _, err = sync(capsys, TerminalStream(), *args)
    assert code == 0 and err == ""


# ----------------------------------------------------------------------------- plan at scale


def test_diff_of_500_new_agents_is_summary_first_and_one_line_per_object(capsys, fake, tmp_path: Path) -> None:
    roster = [{"id": f"agent-{j:02d}", "name": f"Agent {j}", "access": "public"} for j in range(10)]
    blueprints = [blueprint(f"team-with-a-long-name-{i:02d}", agents=roster) for i in range(50)]
    root = write_blueprint_dir(tmp_path / "bp", blueprints)
    args = ["-p", str(root), "--bundle", str(write_function_dir(tmp_path / "fn", root))]
    code, out, err = run(capsys, "diff", *args)
    lines = out.splitlines()
    n_functions = len(list((tmp_path / "fn").glob("*.py"))) + 1  # + the rendered user_files toggle
    assert code == 0 and err == ""
    assert lines[0] == lines[-1] == f"Plan: {500 + n_functions} to add, 0 to change, 0 to destroy."
    objects = lines[2:-2]
    assert len(lines) == 500 + n_functions + 4 and len(objects) == 500 + n_functions
    model_ids = {f"aihub_agent_pipe.team-with-a-long-name-{i:02d}.agent-{j:02d}" for i in range(50) for j in range(10)}
    shown = {line.split()[2] for line in objects if line.split()[1] == "model"}
    assert shown == model_ids  # every id whole, each on its own line, none wrapped or cut
    assert len(out.encode()) < 200 * len(lines)


def plan_json(changes: list[dict[str, Any]]) -> dict[str, Any]:
    count = {a: sum(1 for c in changes if c["action"] == a) for a in ("create", "update", "delete")}
    return {
        "format_version": "1",
        "changes": changes,
        "orphans": [],
        "summary": {"add": count["create"], "change": count["update"], "destroy": count["delete"]},
    }


def rendered(plan: dict[str, Any], width: int = 60) -> list[str]:
    buffer = io.StringIO()
    render_plan(plan, Console(file=buffer, width=width, no_color=True, highlight=False))
    return buffer.getvalue().splitlines()


def test_500_mixed_changes_on_a_narrow_terminal_keep_one_line_each() -> None:
    long_id = "aihub_agent_pipe.a-blueprint-whose-name-is-longer-than-the-terminal.agent-{:03d}"
    changes: list[dict[str, Any]] = [
        {"kind": "model", "id": long_id.format(i), "action": "create", "fields": []} for i in range(300)
    ]
    changes += [
        {
            "kind": "model",
            "id": long_id.format(i),
            "action": "update",
            "fields": [
                {"path": "meta.capabilities.web_search", "before": False, "after": True},
                {"path": "name", "before": f"Old {i}", "after": f"New {i}"},
            ],
        }
        for i in range(300, 450)
    ]
    changes += [{"kind": "model", "id": long_id.format(i), "action": "delete", "fields": []} for i in range(450, 500)]
    lines = rendered(plan_json(changes), width=40)
    assert lines[0] == lines[-1] == "Plan: 300 to add, 150 to change, 50 to destroy."
    assert len(lines) == 4 + 500 + 150 * 2
    object_lines = [line for line in lines if line.startswith("  ") and not line.startswith("      ")]
    assert [line.split()[2] for line in object_lines] == [long_id.format(i) for i in range(500)]
    assert all(line.rstrip().endswith(("create", "update", "delete  (managed by provision)")) for line in object_lines)


def field_lines(path: str, before: Any, after: Any) -> list[list[str]]:
    """The rendered field lines of one update, split into words."""
    lines = rendered(
        plan_json(
            [
                {
                    "kind": "function",
                    "id": "x",
                    "action": "update",
                    "fields": [{"path": path, "before": before, "after": after}],
                }
            ]
        )
    )
    return [line.split() for line in lines if line.startswith("      ~")]


def test_a_json_valve_that_differs_in_one_entry_shows_that_entry() -> None:
    entries = [{"id": f"team-{i:03d}.agent", "url": "http://127.0.0.1:8700", "features": []} for i in range(200)]
    before = json.dumps(entries)
    entries[117]["features"] = ["web_search"]
    assert field_lines("valves.AGENTS", before, json.dumps(entries)) == [
        ["~", "valves.AGENTS[team-117.agent].features", "[]", "->", '["web_search"]']
    ]


def test_a_long_plain_value_is_cut_to_the_part_that_changed() -> None:
    before = "Answers questions. " * 20 + "Escalates to tier two. " + "Polite and brief. " * 20
    after = before.replace("tier two", "the legal team")
    [[_, _, *shown]] = field_lines("meta.description", before, after)
    shown_before, shown_after = " ".join(shown).split(" -> ")
    assert "tier two" in shown_before and "the legal team" in shown_after
    assert shown_before.startswith("…") and shown_before.endswith("…")
    assert len(shown_before) < 2 * MAX_VALUE_CHARS and len(shown_after) < 2 * MAX_VALUE_CHARS


def test_a_changed_dict_is_shown_key_by_key() -> None:
    marker = {"managed_by": "aihub-provision", "blueprint": "fleet", "agent": "a", "features": []}
    lines = rendered(
        plan_json(
            [
                {
                    "kind": "model",
                    "id": "m",
                    "action": "update",
                    "fields": [
                        {"path": "meta.aihub", "before": marker, "after": {**marker, "features": ["web_search"]}},
                        {"path": "meta.tags", "before": {"a": 1}, "after": {"b": 2}},
                    ],
                }
            ]
        )
    )
    fields = [line.split() for line in lines if line.startswith("      ~")]
    assert [f[1] for f in fields] == ["meta.aihub.features", "meta.tags.a", "meta.tags.b"]
    assert fields[0][2:] == ["[]", "->", '["web_search"]']
    assert fields[1][2:] == ["1", "->", "(absent)"] and fields[2][2:] == ["(absent)", "->", "2"]
