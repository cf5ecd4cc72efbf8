"""docs/agent-frameworks.md's snippets are the code the framework matrix runs (scripts/framework-table).

The page's framework-snippets section is cut from the app files of tests/support/frameworks/apps/;
these tests fail when someone edits one side only, so the page cannot drift from what is tested.
"""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import re
import shlex
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.frameworks import harness

REPO = Path(__file__).resolve().parents[2]


def _table() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("framework_table", str(REPO / "scripts" / "framework-table"))
    spec = importlib.util.spec_from_loader("framework_table", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_the_pages_snippets_are_the_app_files_code() -> None:
    table = _table()
    assert table.main(["--check"]) == 0, "run scripts/framework-table --snippets and commit docs/agent-frameworks.md"


@pytest.mark.parametrize("name", ["agno", "crewai", "llamaindex"])
def test_each_framework_shows_its_server_its_backend_entry_and_what_reaches_its_code(name: str) -> None:
    table = _table()
    fw = harness.framework(name)
    page = (REPO / "docs" / "agent-frameworks.md").read_text(encoding="utf-8")
    code = table.snippet(fw.app)
    assert code and code in page
    assert f"  url: http://127.0.0.1:8000{fw.agent_path}" in page
    assert table.reaches(fw.app) and all(item in page for item in table.reaches(fw.app))


def _section(name: str) -> str:
    page = (REPO / "docs" / "agent-frameworks.md").read_text(encoding="utf-8")
    return page.split(f"### {name} (", 1)[1].split("\n### ", 1)[0]


@pytest.mark.parametrize("name", sorted(harness.frameworks()))
def test_each_frameworks_code_imports_what_it_uses_and_says_what_to_install(name: str) -> None:
    # A newcomer copies the page's code: every name it takes from a package must be imported there
    # (the page showed none of its imports), and the pins the matrix runs are one pip line.
    table = _table()
    fw = harness.framework(name)
    code = table.snippet(fw.app)
    section, used = _section(name), set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", code))
    imported = {
        (alias.asname or alias.name): node.module
        for node in ast.parse(fw.app.read_text(encoding="utf-8")).body
        if isinstance(node, ast.ImportFrom) and node.module not in ("__future__", "_common")
        for alias in node.names
    }
    needed = sorted(n for n in used if n in imported)
    assert needed, "the snippet uses no package at all?"
    for n in needed:
        assert re.search(rf"^from {re.escape(str(imported[n]))} import .*\b{n}\b", section, re.M), n
    assert "pip install " + " ".join(shlex.quote(pin) for pin in fw.pins) in section
    assert "uvicorn server:app --host 127.0.0.1 --port 8000" in section


def test_a_changed_app_file_makes_the_check_fail(tmp_path: Path) -> None:
    table = _table()
    page = tmp_path / "page.md"
    text = (REPO / "docs" / "agent-frameworks.md").read_text(encoding="utf-8")
    page.write_text(text.replace("db=InMemoryDb()", "db=None"), encoding="utf-8")
    assert table.main(["--check", "--page", str(page)]) == 1
    page.write_text(text.replace(table.SNIPPETS_START, ""), encoding="utf-8")
    assert table.main(["--check", "--page", str(page)]) == 1
