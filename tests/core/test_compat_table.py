"""scripts/compat-table: the compatibility table of docs/openwebui-versions.md is rendered from the
matrix's recorded results."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.builders import REPO
from tests.support.loading import load_file


def load_script():
    return load_file(REPO / "scripts" / "compat-table")


def test_the_table_is_written_between_the_markers_from_the_results(tmp_path: Path) -> None:
    script = load_script()
    results = tmp_path / "results"
    results.mkdir()
    (results / "0.10.2.json").write_text(
        json.dumps({"version": "0.10.2", "recorded_at": 0, "steps": {"sync": "pass", "prune": "FAIL: 500"}})
    )
    (results / "0.6.43.json").write_text(
        json.dumps({"version": "0.6.43", "recorded_at": 0, "steps": {"sync": "pass", "prune": "pass"}})
    )
    page = tmp_path / "versions.md"
    page.write_text(f"# x\n\n{script.START}\nold\n{script.END}\n\nafter\n")
    assert script.main(["--results", str(results), "--page", str(page)]) == 0
    text = page.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| 0.")]
    versions = [row.split(" | ")[0][2:] for row in rows]
    assert versions == ["0.6.43", "0.7.2", "0.8.12", "0.9.6", "0.10.2", "0.11.4", "0.12.4"]  # by version, not name
    assert rows[0].startswith("| 0.6.43 | sync, prune | works |")
    assert rows[4].startswith("| 0.10.2 | sync, prune | **fails**: prune: FAIL: 500 |")
    assert rows[1] == "| 0.7.2 | (no result recorded by this run) | not run | |"  # a tested release without a result
    assert "old" not in text and text.endswith("\n\nafter\n")


def test_no_results_is_an_error_not_an_empty_table(tmp_path: Path) -> None:
    assert load_script().main(["--results", str(tmp_path / "none"), "--print"]) == 1


def test_a_result_for_a_release_no_longer_tested_gets_no_row(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "0.5.9.json").write_text(json.dumps({"version": "0.5.9", "recorded_at": 0, "steps": {"sync": "pass"}}))
    (results / "0.12.4.json").write_text(json.dumps({"version": "0.12.4", "recorded_at": 0, "steps": {"sync": "pass"}}))
    page = tmp_path / "versions.md"
    script = load_script()
    page.write_text(f"{script.START}\n{script.END}\n")
    assert script.main(["--results", str(results), "--page", str(page)]) == 0
    assert "| 0.5.9 |" not in page.read_text() and "| 0.12.4 | sync | works |" in page.read_text()


def test_by_default_it_writes_the_versions_page_which_holds_the_markers() -> None:
    script = load_script()
    assert script.PAGE == REPO / "docs" / "openwebui-versions.md"
    text = script.PAGE.read_text(encoding="utf-8")
    assert text.count(script.START) == 1 and text.count(script.END) == 1
    assert text.index(script.START) < text.index(script.END)
    assert script.START not in (REPO / "README.md").read_text(encoding="utf-8")


def test_a_step_that_passed_its_own_way_says_how(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    steps = {"sync": "pass", "chat with a file": "pass (the page saves the usage; an extra source (empty))"}
    (results / "0.6.43.json").write_text(json.dumps({"version": "0.6.43", "recorded_at": 0, "steps": steps}))
    page = tmp_path / "versions.md"
    script = load_script()
    page.write_text(f"{script.START}\n{script.END}\n")
    assert script.main(["--results", str(results), "--page", str(page)]) == 0
    assert (
        "| 0.6.43 | sync, chat with a file | works, with chat with a file: the page saves the usage; "
        "an extra source (empty) |"
    ) in page.read_text()
