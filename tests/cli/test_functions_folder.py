"""The team's functions folder: ASCII ids, no symlinks out of it, a note for each file skipped,
and a global function flagged in every plan form (issue 23, finding 10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from provisioner.render import GLOBAL_NOTE
from tests.support.builders import REPO, blueprint, write_blueprint_dir
from tests.support.fake_owui import FakeOpenWebUI
from tests.support.run_cli import run_cli as run

TOKEN = "sk-functions-folder-test-0123456789"
FILTER = '"""\ntitle: Audit\nglobal: {g}\n"""\n\n\nclass Filter:\n    def inlet(self, body: dict) -> dict:\n        return body\n'


def repo(tmp_path: Path, files: dict[str, str] | None = None) -> list[str]:
    root = write_blueprint_dir(tmp_path / "blueprints", [blueprint("demo")])
    functions = tmp_path / "functions"
    functions.mkdir()
    for name, text in (files or {"audit.py": FILTER.format(g="false")}).items():
        (functions / name).parent.mkdir(parents=True, exist_ok=True)
        (functions / name).write_text(text)
    return ["-p", str(root), "--functions", str(functions), "--bundle", str(REPO / "owui_functions")]


@pytest.mark.parametrize(
    "name, shown",
    [
        ("\u0430ihub_feature_filter.py", "U+0430 (CYRILLIC SMALL LETTER A)"),  # looks like the bundle's filter
        ("caf\u00e9.py", "U+00E9 (LATIN SMALL LETTER E WITH ACUTE)"),
    ],
)
def test_a_non_ascii_function_id_is_refused_naming_the_file(tmp_path: Path, capsys, name: str, shown: str) -> None:
    args = repo(tmp_path, {name: FILTER.format(g="false")})
    code, out, err = run(capsys, "validate", *args)
    assert code == 1
    assert f"{tmp_path / 'functions' / name}: id:" in err and f"(it holds {shown}, which is not ASCII)" in err


def test_a_symlink_out_of_the_functions_folder_is_refused(tmp_path: Path, capsys) -> None:
    outside = tmp_path / "elsewhere.py"
    outside.write_text(FILTER.format(g="false"))
    args = repo(tmp_path)
    (tmp_path / "functions" / "leak.py").symlink_to(outside)
    code, _, err = run(capsys, "validate", *args)
    assert code == 1
    assert f"{tmp_path / 'functions' / 'leak.py'}: a symlink to {outside}, outside the functions folder" in err


def test_a_symlink_inside_the_functions_folder_is_read(tmp_path: Path, capsys) -> None:
    args = repo(tmp_path, {"lib/audit_impl.py": FILTER.format(g="false")})
    (tmp_path / "functions" / "audit.py").symlink_to(tmp_path / "functions" / "lib" / "audit_impl.py")
    code, out, err = run(capsys, "validate", *args)
    assert code == 0, err
    assert "audit_impl.py" not in err  # read through the link: no "not uploaded" note


def test_every_skipped_file_gets_a_note(fake: FakeOpenWebUI, tmp_path: Path, capsys) -> None:
    files = {
        "audit.py": FILTER.format(g="false"),
        "x.PY": FILTER.format(g="false"),
        "x.py.bak": FILTER.format(g="false"),
        "sub/nested.py": FILTER.format(g="false"),
        "__pycache__/audit.cpython-311.pyc": "",
    }
    args = repo(tmp_path, files)
    functions = tmp_path / "functions"
    expected = [
        f"Note: {functions / 'sub' / 'nested.py'}: not uploaded: functions are read only from the top level",
        f"Note: {functions / 'x.PY'}: not uploaded: a function file's name ends in .py (lowercase)",
        f"Note: {functions / 'x.py.bak'}: not uploaded: not a .py file",
    ]
    for command in (["validate"], ["diff"], ["sync", "--yes"]):
        code, _, err = run(capsys, *command, *args)
        assert code == 0, err
        for note in expected:
            assert note in err, (command, err)
        assert "__pycache__" not in err and "audit.py:" not in err
    code, out, _ = run(capsys, "validate", *args, "-o", "json")
    notes = json.loads(out)["notes"]
    assert {n["file"] for n in notes} >= {
        str(functions / "x.PY"),
        str(functions / "x.py.bak"),
        str(functions / "sub" / "nested.py"),
    }
    assert "audit" in fake.functions and "x" not in fake.functions and "nested" not in fake.functions


def test_a_global_function_is_flagged_in_every_plan_form(fake: FakeOpenWebUI, tmp_path: Path, capsys) -> None:
    """A new `global: true` function used to show only as "create"."""
    args = repo(tmp_path, {"audit.py": FILTER.format(g="true"), "quiet.py": FILTER.format(g="false")})
    code, out, _ = run(capsys, "diff", *args)
    assert code == 0
    assert "Global: audit runs on every model of the instance (global: true)." in out
    [audit_line] = [line for line in out.splitlines() if line.startswith("  + function  audit ")]
    assert f"create  ({GLOBAL_NOTE})" in audit_line
    [quiet_line] = [line for line in out.splitlines() if line.startswith("  + function  quiet ")]
    assert GLOBAL_NOTE not in quiet_line
    code, out, _ = run(capsys, "diff", *args, "-o", "json")
    changes = {c["id"]: c for c in json.loads(out)["changes"]}
    assert changes["audit"]["global"] is True and "global" not in changes["quiet"]
    assert [c["id"] for c in changes.values() if c.get("global")] == ["audit"]
    code, out, _ = run(capsys, "diff", *args, "-o", "markdown")
    assert "> **Global:** `audit` runs on every model of the instance (`global: true`)." in out
    assert f"| + | function | `audit` | create ({GLOBAL_NOTE}) |" in out
    assert "| + | function | `quiet` | create |" in out
    # Synced, then its code changes: still flagged, it still runs everywhere.
    assert run(capsys, "sync", *args, "--yes")[0] == 0
    assert fake.functions["audit"]["is_global"] is True
    (tmp_path / "functions" / "audit.py").write_text(FILTER.format(g="true") + "# changed\n")
    code, out, _ = run(capsys, "diff", *args, "-o", "json")
    [change] = json.loads(out)["changes"]
    assert (change["id"], change["action"], change["global"]) == ("audit", "update", True)
