"""Every function file spells the shared metadata key the same way, through one constant.

The feature filter, the toggle filters and the agent pipe are standalone modules (no imports
between them), so nothing but this test keeps their spelling of the key in step. Files are
found by glob, so a function added to owui_functions/ later is checked without editing this test.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from provisioner.toggle_filters import render_toggle_filter

ROOT = Path(__file__).resolve().parents[2]
CONTRACT_KEY = "aihub_requested_features"
# Anything that looks like an attempt at the key: aihub_requested, AIHUB-REQUESTED-FEATURE, ...
KEY_LIKE = re.compile(r"aihub[_\-\s]*requested\w*", re.IGNORECASE)

FUNCTION_FILES = sorted((ROOT / "owui_functions").glob("*.py"))
# Test and benchmark functions uploaded next to the bundle that read the key (anything spelled
# like it) read the same key; one that never touches it (bench/fixtures/paced_pipe.py) is not held to it.
FIXTURE_DIRS = (ROOT / "tests" / "e2e" / "fixtures", ROOT / "bench" / "fixtures")
FIXTURE_FILES = [
    path
    for folder in FIXTURE_DIRS
    for path in sorted(folder.glob("*.py"))
    if KEY_LIKE.search(path.read_text(encoding="utf-8"))
]


def sources() -> list[tuple[str, str]]:
    found = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in FUNCTION_FILES + FIXTURE_FILES]
    rendered = render_toggle_filter(feature="user_files", title="Your files", description="d", icon=None)
    return [*found, ("<rendered aihub_toggle_user_files>", rendered)]


SOURCES = sources()


def key_assignments(tree: ast.Module) -> list[ast.Constant | ast.expr]:
    """Values assigned to METADATA_KEY at module level."""
    values: list[ast.Constant | ast.expr] = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = [node.target.id]
        else:
            continue
        if "METADATA_KEY" in names and node.value is not None:
            values.append(node.value)
    return values


def docstring_nodes(tree: ast.Module) -> set[int]:
    """ids of the Constant nodes that are docstrings (module, class, function)."""
    owners = [
        tree,
        *(n for n in ast.walk(tree) if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))),
    ]
    found: set[int] = set()
    for owner in owners:
        body = owner.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            found.add(id(body[0].value))
    return found


def test_the_bundle_has_function_files():
    assert any(p.name == "aihub_feature_filter.py" for p in FUNCTION_FILES)


def test_the_test_and_benchmark_functions_are_checked_too():
    assert {"observer_filter.py", "stub_pipe.py"} <= {p.name for p in FIXTURE_FILES}


@pytest.mark.parametrize(("name", "source"), SOURCES, ids=[name for name, _ in SOURCES])
def test_defines_metadata_key_once_as_the_contract_string(name, source):
    values = key_assignments(ast.parse(source))
    assert len(values) == 1, f"{name}: METADATA_KEY must be assigned exactly once at module level"
    value = values[0]
    assert isinstance(value, ast.Constant), f"{name}: METADATA_KEY must be a plain string literal"
    assert value.value == CONTRACT_KEY


@pytest.mark.parametrize(("name", "source"), SOURCES, ids=[name for name, _ in SOURCES])
def test_no_other_string_literal_spells_the_key(name, source):
    """Code must use METADATA_KEY; docs may name the key, but only spelled exactly right."""
    tree = ast.parse(source)
    allowed = {id(v) for v in key_assignments(tree)}
    docstrings = docstring_nodes(tree)
    offenders = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in allowed:
            continue
        spellings = KEY_LIKE.findall(node.value)
        if not spellings:
            continue
        if id(node) in docstrings and all(s == CONTRACT_KEY for s in spellings):
            continue
        offenders.append((node.lineno, node.value[:60]))
    assert not offenders, f"{name}: spell the key through METADATA_KEY only: {offenders}"


def test_every_file_agrees_on_one_value():
    values = {
        value.value
        for _, src in SOURCES
        for value in key_assignments(ast.parse(src))
        if isinstance(value, ast.Constant)
    }
    assert values == {CONTRACT_KEY}
