"""What a new user sees first: version, bare `provision`, help text, and YAML error wording.

The blueprint-side items (unknown capability, `serves` typo, openwebui_capabilities key) are
cases of the bad-input corpus: unknown_capability, serves_typo_with_a_default,
openwebui_capabilities_misspelled.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from provisioner import __version__
from provisioner.cli import app
from tests.support.builders import REPO, write_blueprint_dir
from tests.support.run_cli import run_cli as run

COMMANDS = sorted(c.name or getattr(c.callback, "__name__", "") for c in app.registered_commands)
ENV_VARS = ("OPENWEBUI_URL", "OPENWEBUI_TOKEN", "OPENWEBUI_TOKEN_FILE", "PROVISION_TARGET", "NO_COLOR")


@pytest.fixture(autouse=True)
def narrow_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # a new user's terminal, not the CI log's width


@pytest.mark.parametrize("args", [["--version"], ["version"]])
def test_version_is_printed(capsys, args: list[str]) -> None:
    assert run(capsys, *args) == (0, f"provision {__version__}\n", "")


def test_bare_provision_prints_help_once_without_an_error(capsys) -> None:
    code, out, err = run(capsys)
    assert code == 0 and err == ""
    assert out.count("Usage: provision") == 1 and "Error" not in out
    assert out == run(capsys, "--help")[1]


def test_top_level_help_lines_are_not_cut_off(capsys) -> None:
    _, out, _ = run(capsys, "--help")
    commands = out.split("Commands:", 1)[1].splitlines()[1:]
    assert {line.split()[0] for line in commands if line.strip()} == set(COMMANDS)
    for line in commands:
        assert "..." not in line and len(line) <= 80, line


@pytest.mark.parametrize("command", COMMANDS)
def test_each_env_var_is_shown_once(capsys, command: str) -> None:
    _, out, _ = run(capsys, command, "--help")
    for name in ENV_VARS:
        assert len(re.findall(rf"\b{name}\b", out)) <= 1, (name, out)


@pytest.mark.parametrize("command", COMMANDS)
def test_help_shows_no_type_placeholders(capsys, command: str) -> None:
    _, out, _ = run(capsys, command, "--help")
    assert not re.search(r"<(list|int|float|str|path|bool)\b[^>]*>", out), out


def test_yaml_syntax_error_has_line_column_and_a_plain_hint(capsys, tmp_path: Path) -> None:
    root = write_blueprint_dir(tmp_path / "bp")
    (root / "demo.yaml").write_text("id: demo\nname: Demo\ndescription: Note: this breaks\n")
    code, out, err = run(capsys, "validate", "-p", str(root), "--bundle", str(REPO / "owui_functions"))
    assert code == 1 and out == ""
    [problem] = [line for line in err.splitlines() if "demo.yaml" in line]
    assert f"{root / 'demo.yaml'}:3: YAML syntax error at column 18: mapping values are not allowed here." in problem
    assert "Hint: a value holds ': ' (quote the whole value)" in problem
