"""docs/agent-frameworks.md's snippets are the code the framework matrix runs (scripts/framework-table).

The page's framework-snippets section is cut from the app files of tests/support/frameworks/apps/;
these tests fail when someone edits one side only, so the page cannot drift from what is tested.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
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


def test_a_changed_app_file_makes_the_check_fail(tmp_path: Path) -> None:
    table = _table()
    page = tmp_path / "page.md"
    text = (REPO / "docs" / "agent-frameworks.md").read_text(encoding="utf-8")
    page.write_text(text.replace("db=InMemoryDb()", "db=None"), encoding="utf-8")
    assert table.main(["--check", "--page", str(page)]) == 1
    page.write_text(text.replace(table.SNIPPETS_START, ""), encoding="utf-8")
    assert table.main(["--check", "--page", str(page)]) == 1
