"""Every function file spells the contract (provisioner/contract.py) as provision does.

The function files are uploaded one by one and cannot import provisioner.contract. The agent
pipe's modules import it, and scripts/build-pipe writes the definitions into the built file
(tests/functions/test_build_pipe.py); every other function file holds its own copy of the
constants it needs. This reads every module-level constant of those files (the feature filter,
and a rendered toggle filter) with ast, without running the file, and compares each one the
contract names with the contract's value. The pipe's valves and model-id reading are checked on
the built file.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from provisioner import contract
from provisioner.toggle_filters import render_toggle_filter, toggle_filter_id

ROOT = Path(__file__).resolve().parents[2]
PIPE = ROOT / "owui_functions" / f"{contract.PIPE_FUNCTION_ID}.py"  # built: its constants are the contract's own
BUNDLE = sorted(p for p in (ROOT / "owui_functions").glob("*.py") if p != PIPE)

# A function file's constant name -> the contract's value. FUNCTION_ID is the file's own id.
SHARED = {
    "METADATA_KEY": contract.METADATA_KEY,
    "MARKER_KEY": contract.MARKER_KEY,
    "MANAGED_BY": contract.MANAGED_BY,
}
# What each file must hold (a file that needs a constant and lost it is caught too).
REQUIRED = {
    contract.FEATURE_FILTER_ID: {"METADATA_KEY", "MARKER_KEY", "MANAGED_BY"},
    "toggle": {"METADATA_KEY", "MARKER_KEY", "MANAGED_BY"},
}
PIPE_VALVES = {contract.AGENTS_VALVE, contract.API_KEYS_VALVE, contract.SIGNING_VALVE, contract.IDENTITY_VALVE}


def constants(tree: ast.Module) -> dict[str, object]:
    """Module-level NAME = "literal" assignments."""
    found: dict[str, object] = {}
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        value = getattr(node, "value", None)
        for target in targets:
            if isinstance(target, ast.Name) and target.id.isupper() and isinstance(value, ast.Constant):
                found[target.id] = value.value
    return found


def sources() -> list[tuple[str, str, str]]:
    """(label, function id, source) of every function file provision uploads."""
    files = [(p.name, p.stem, p.read_text(encoding="utf-8")) for p in BUNDLE]
    toggle = render_toggle_filter(feature="user_files", title="Your files", description="d", icon=None)
    return [*files, ("<rendered toggle filter>", toggle_filter_id("user_files"), toggle)]


SOURCES = sources()


def test_the_bundle_is_the_pipe_and_the_feature_filter():
    assert PIPE.is_file()
    assert {stem for _, stem, _ in SOURCES} >= {contract.FEATURE_FILTER_ID}


@pytest.mark.parametrize(("label", "ident", "source"), SOURCES, ids=[s[0] for s in SOURCES])
def test_every_contract_constant_in_a_function_file_has_the_contract_value(label, ident, source):
    found = constants(ast.parse(source))
    expected = {**SHARED, "FUNCTION_ID": ident}
    wrong = {name: found[name] for name in expected if name in found and found[name] != expected[name]}
    assert not wrong, f"{label} disagrees with provisioner/contract.py: {wrong}"
    kind = "toggle" if ident.startswith(contract.TOGGLE_FILTER_PREFIX) else ident
    missing = REQUIRED.get(kind, {"METADATA_KEY"}) - set(found)
    assert not missing, f"{label} lacks {sorted(missing)}"


def test_every_bundle_id_has_the_bundle_prefix():
    for ident in [PIPE.stem, *(ident for _, ident, _ in SOURCES)]:
        assert ident.startswith(contract.BUNDLE_PREFIX)


def test_the_pipe_declares_every_valve_sync_writes():
    source = PIPE.read_text(encoding="utf-8")
    valves = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef) and n.name == "Valves")
    declared = {n.target.id for n in valves.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    assert PIPE_VALVES <= declared, f"the pipe's Valves lack {sorted(PIPE_VALVES - declared)}"


def test_the_pipe_reads_a_model_id_as_the_contract_builds_it():
    """The pipe maps `<function id>.<rest>` to the agent entry with id `<rest>` (its _agent_for,
    everything after the first dot): that is contract.agent_of_model."""
    source = PIPE.read_text(encoding="utf-8")
    agent_for = next(
        n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == "_agent_for"
    )
    assert 'partition(".")' in ast.unparse(agent_for).replace("'", '"')
    model = contract.model_id("fleet-01", "agent-02")
    assert model == f"{contract.PIPE_FUNCTION_ID}.fleet-01.agent-02"
    assert contract.agent_of_model(model) == model.partition(".")[2] == contract.agent_key("fleet-01", "agent-02")
    assert contract.split_agent_key(contract.agent_of_model(model) or "") == ("fleet-01", "agent-02")


@pytest.mark.parametrize("model", ["gpt-4o", "aihub_agent_pipe", "aihub_agent_pipe.", "other_pipe.a.b"])
def test_a_model_the_pipe_does_not_serve_has_no_agent(model):
    assert contract.agent_of_model(model) is None
