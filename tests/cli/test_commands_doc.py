"""docs/commands.md's "Every command" table agrees with the typer app: each row's synopsis names
exactly the command's options (bar the shared ones its "Defaults and the connection" section
describes once), so an option added to, renamed in or removed from the CLI fails here until the
table follows. Read from typer's click command, the same object `--help` prints."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer.core
import typer.main

from provisioner.cli import app

REPO = Path(__file__).resolve().parents[2]
COMMANDS_MD = REPO / "docs" / "commands.md"

# Options documented once, in "Defaults and the connection", not in every row.
SHARED = {"--targets-file", "--no-color", "--url", "--token-file", "--insecure", "--timeout"}
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
POSITIONAL = re.compile(r"\[[A-Z][A-Z_]*(?: \.\.\.)?\]")  # [DIR], [ID_OR_PATTERN ...]
REQUIRED = re.compile(r"[A-Z][A-Z_]*(?: |$)")  # AGENT


def cli_group() -> typer.core.TyperGroup:
    """The typer app as click sees it: a group of commands."""
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    return group


def section(title: str) -> str:
    text = COMMANDS_MD.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.DOTALL | re.MULTILINE)
    assert match, f"docs/commands.md has no section '## {title}'"
    return match.group(1)


def synopses() -> dict[str | None, list[str]]:
    """Each command's synopsis code spans from the table's first column (None: the top-level
    `provision` spans, such as `provision --version` and `provision -v <command> ...`)."""
    group = cli_group()
    found: dict[str | None, list[str]] = {}
    for line in section("Every command").splitlines():
        if not line.startswith("| `provision"):
            continue
        first_cell = re.split(r"(?<!\\)\|", line)[1]
        for span in re.findall(r"`([^`]+)`", first_cell):
            words = span.replace("\\|", "|").split()
            assert words[0] == "provision", f"a synopsis that is not a provision command: {span!r}"
            name = next((w for w in words[1:] if not w.startswith("-")), None)
            found.setdefault(name if name in group.commands else None, []).append(" ".join(words))
    return found


def visible_options(command: Any) -> list[list[str]]:
    """The names of each option `--help` lists for a command (hidden ones left out)."""
    return [
        [*param.opts, *param.secondary_opts]
        for param in command.params
        if param.param_type_name == "option" and not getattr(param, "hidden", False)
    ]


def has_arguments(command: Any) -> bool:
    return any(param.param_type_name == "argument" for param in command.params)


def test_the_table_is_found() -> None:
    rows = synopses()
    assert {"validate", "diff", "sync", None} <= rows.keys(), f"the parser found too little: {sorted(map(str, rows))}"


def test_every_command_has_a_row() -> None:
    group = cli_group()
    missing = sorted(set(group.commands) - set(synopses()))
    assert not missing, f"docs/commands.md's table has no row for: {missing}"


def test_each_rows_options_are_the_commands_options() -> None:
    group = cli_group()
    rows = synopses()
    problems = []
    for name, command in sorted(group.commands.items()):
        spans = rows.get(name, [])
        named = {token for span in spans for token in OPTION.findall(span)}
        options = visible_options(command)
        known = {opt for names in options for opt in names}
        for names in options:
            if not set(names) & SHARED and not set(names) & named:
                problems.append(f"`provision {name}`: the row lacks {'/'.join(names)}")
        for token in sorted(named - known):
            problems.append(f"`provision {name}`: the row names {token}, which the command does not take")
        # `[DIR]` anywhere, or a required one (`AGENT`) right after the command's name
        shows_arguments = any(
            POSITIONAL.search(span) or REQUIRED.match(span, len(f"provision {name} ")) for span in spans
        )
        if has_arguments(command) != shows_arguments:
            takes = "takes" if has_arguments(command) else "takes no"
            problems.append(
                f"`provision {name}`: the command {takes} arguments, the row shows "
                f"{'a [NAME]' if shows_arguments else 'none'}"
            )
    assert not problems, "\n".join(problems)


def test_the_top_level_options_are_in_the_table() -> None:
    group = cli_group()
    named = {token for span in synopses().get(None, []) for token in OPTION.findall(span)}
    missing = ["/".join(names) for names in visible_options(group) if not set(names) & named]
    assert not missing, f"docs/commands.md's table shows no `provision OPTION` row for: {missing}"
    assert named <= {opt for names in visible_options(group) for opt in names}, named


def test_the_shared_options_are_described_once() -> None:
    """What the rows leave out is in "Defaults and the connection", and is what that section says."""
    text = section("Defaults and the connection")
    missing = sorted(opt for opt in SHARED if f"`{opt}" not in text)
    assert not missing, f"'Defaults and the connection' does not describe: {missing}"
    group = cli_group()
    for name, command in group.commands.items():
        known = {opt for names in visible_options(command) for opt in names}
        # "--targets-file FILE ... on every command with --target"
        assert ("--target" in known) == ("--targets-file" in known), name
        # "--no-color ... on every command but token and version"
        assert ("--no-color" in known) == (name not in {"token", "version"}), name


def test_the_exit_codes_section_names_exactly_the_codes_provision_exits_with() -> None:
    """The exit codes are written once, in docs/commands.md; cli's EXIT_* constants and
    stopping.exit_code are what provision returns."""
    from provisioner import cli
    from provisioner.stopping import exit_code

    documented = {int(code) for code in re.findall(r"`(\d+)`", section("Exit codes"))}
    codes = {cli.EXIT_OK, cli.EXIT_ERROR, cli.EXIT_CHANGES, exit_code("SIGINT"), exit_code("SIGTERM")}
    assert documented == codes
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "Exit codes" not in readme and "| command |" not in readme, "README links to docs/commands.md"
