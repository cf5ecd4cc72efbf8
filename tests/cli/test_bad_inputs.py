"""The bad-input corpus, offline: every malformed or hostile blueprint set gives exactly its errors.

Each case in tests/data/bad_blueprints/ (see tests/support/bad_inputs.py) runs `provision validate`
in-process: exit 1, nothing on stdout, no traceback, and on stderr exactly the expected problems,
each naming file, line and field. tests/e2e/test_bad_inputs_e2e.py runs the same table through
`provision sync` against a real Open WebUI.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from provisioner.errors import BlueprintError
from provisioner.loader import load_catalog
from provisioner.pipeline import load_inputs
from tests.support.bad_inputs import ARGS, BUILDERS, CASES_DIR, Case, check_stderr, load_cases, make_workspace
from tests.support.builders import write_function_dir
from tests.support.owui_instance import unavailable
from tests.support.run_cli import run_cli as run

CASES = load_cases()
OFFLINE = [c for c in CASES if not c.needs_instance]
INSTANCE_ONLY = [c for c in CASES if c.needs_instance]


@pytest.fixture
def workspace(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The case's blueprints/ and functions/ in a fresh directory, which is also the cwd."""
    root = make_workspace(case, tmp_path / "ws")
    monkeypatch.chdir(root)
    return root


def test_the_corpus_is_complete() -> None:
    names = {c.name for c in CASES}
    assert len(CASES) >= 30
    assert {p.name for p in CASES_DIR.iterdir() if p.is_dir()} == names, "every case directory needs an expect.yaml"
    assert set(BUILDERS) <= names, "a builder without a case directory never runs"
    assert all(c.errors for c in CASES)


@pytest.mark.parametrize("case", [c.param() for c in OFFLINE])
def test_validate_reports_exactly_the_expected_errors(case: Case, workspace: Path, capsys) -> None:
    code, out, err = run(capsys, "validate", *ARGS)
    assert (code, out) == (1, ""), err
    check_stderr(case, err)
    with pytest.raises(BlueprintError) as info:  # the same problems, field by field, all offline
        load_inputs(Path("blueprints"), Path("own_functions"), Path("functions"))
    found = [(p.file, p.line, p.field) for p in info.value.problems]
    assert found == [(e.file, e.line, e.field) for e in case.errors]
    for problem, expected in zip(info.value.problems, case.errors, strict=True):
        assert expected.message in problem.message


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _names_a_function(field: str) -> bool:
    """`filters[0]`, `agents[1].actions[0]`: a reference to the user's functions, which
    `generate` (blueprints only) does not read."""
    return re.search(r"(^|\.)(filters|actions)\[", field) is not None


BLUEPRINT_CASES = [
    c for c in OFFLINE if all(e.file.startswith("blueprints") and not _names_a_function(e.field) for e in c.errors)
]


@pytest.mark.parametrize("case", [c.param() for c in BLUEPRINT_CASES])
def test_generate_refuses_bad_blueprints_and_writes_nothing(case: Case, workspace: Path, capsys) -> None:
    out_dir = workspace / "generated"
    out_dir.mkdir()
    before = _tree_digest(out_dir)
    code, out, err = run(capsys, "generate", "-p", "blueprints", "--out", str(out_dir))
    assert (code, out) == (1, ""), err
    check_stderr(case, err)
    assert _tree_digest(out_dir) == before


@pytest.mark.parametrize("case", [c.param() for c in INSTANCE_ONLY])
def test_what_only_the_instance_knows_passes_validate(case: Case, workspace: Path, capsys) -> None:
    # Groups and the backends' key variables are resolved by diff and sync, not offline; the
    # e2e test checks that sync stops on these before writing anything.
    code, out, err = run(capsys, "validate", *ARGS)
    assert code == 0 and out.startswith("Valid: 1 blueprint,"), err


def test_hardening_leaves_ordinary_yaml_alone(tmp_path: Path) -> None:
    # Anchors with merge keys, a quoted 'yes' as a key and a quoted number are plain YAML, not
    # attacks: they load, and a merged agent gets its own model row.
    root = tmp_path / "bp"
    root.mkdir()
    (root / "capabilities.yaml").write_text('capabilities:\n  summarise: {description: "42"}\n  "yes": {}\n')
    (root / "desk.yaml").write_text(
        "id: desk\nname: Desk\nbackend: {url: http://127.0.0.1:8700/desk}\n"
        "steps:\n  - {id: main, calls: [summarise, 'yes']}\n"
        "agents:\n  - &base\n    id: tier1\n    name: First line\n    access: public\n"
        "  - <<: *base\n    id: tier2\n"
    )
    catalog = load_catalog(root)
    [desk] = catalog.blueprints
    assert [(a.id, a.name, a.access) for a in desk.blueprint.agents] == [
        ("tier1", "First line", "public"),
        ("tier2", "First line", "public"),
    ]
    assert catalog.capabilities["summarise"].description == "42"


def test_an_unreadable_file_is_a_located_error_for_root_too(tmp_path: Path) -> None:
    """Root reads every file, so the table skips `yaml_file_unreadable` there; this runs the same
    case as root in a child process without the capabilities that bypass file permissions."""
    if os.geteuid() != 0:
        pytest.skip("not root: test_validate_reports_exactly_the_expected_errors covers this case")
    setpriv = shutil.which("setpriv")
    if setpriv is None:  # in CI this test is the only one that covers the case: never skip it there
        unavailable("setpriv (util-linux) is not installed: cannot drop root's file-permission bypass")
    [case] = [c for c in CASES if c.name == "yaml_file_unreadable"]
    root = tmp_path / "ws"
    root.mkdir()
    shutil.copytree(case.dir / "blueprints", root / "blueprints")
    write_function_dir(root / "functions", root / "blueprints")
    (root / "blueprints" / "demo.yaml").chmod(0)
    result = subprocess.run(
        [
            setpriv,
            "--bounding-set=-dac_override,-dac_read_search",
            "--",
            sys.executable,
            "-m",
            "provisioner",
            "validate",
            *ARGS,
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stdout) == (1, ""), result.stderr
    check_stderr(case, result.stderr)
