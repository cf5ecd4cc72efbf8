"""The provisioner's dependencies point one way (docs/architecture.md, "Layers").

Every module of the package has a layer here; a module may import only modules of its own layer
or a lower one, and the imports form no circle. Imports are read with ast from the source (every
`import`, typing-only ones included), so the test sees what a reader sees, not only what ran.
A new module must be given its layer below.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "provisioner"

VOCABULARY, SOURCE, CORE, ADAPTER, PIPELINE, OUTPUT, CLI = range(7)
LAYERS: dict[str, int] = {
    # vocabulary and errors: import nothing of the package
    "version": VOCABULARY, "contract": VOCABULARY, "errors": VOCABULARY, "grants": VOCABULARY,
    "text": VOCABULARY, "paths": VOCABULARY, "urls": VOCABULARY, "redaction": VOCABULARY, "toggle_translations": VOCABULARY,
    "features": VOCABULARY, "stopping": VOCABULARY, "hashing": VOCABULARY,
    # the blueprint source: YAML, schema, loader, variables, targets, function files
    "yaml_source": SOURCE, "blueprints": SOURCE, "schema_problems": SOURCE, "owui_capabilities": SOURCE, "icons": SOURCE,
    "variables": SOURCE, "targets": SOURCE, "loader": SOURCE, "toggle_filters": SOURCE, "locales": SOURCE,
    "function_files": SOURCE, "attachments": SOURCE, "scaffold": SOURCE,
    # the pure core: desired and observed shapes, the plan
    "commit_message": CORE, "state": CORE, "fingerprint": CORE, "conflicts": CORE, "desired": CORE, "groups": CORE,
    "identity_keys": CORE, "orphans": CORE, "wrappers": CORE, "plan": CORE, "explain": CORE, "doctor": CORE,
    # the Open WebUI adapter: the only layer that reaches the network
    "compat": ADAPTER, "client": ADAPTER, "observed": ADAPTER, "apply": ADAPTER, "drift": ADAPTER,
    "token": ADAPTER, "token_file": ADAPTER,
    # what diff and sync do, step by step
    "pipeline": PIPELINE, "diagnose": PIPELINE,
    # output: text, Markdown, tables, YAML written back
    "render": OUTPUT, "render_markdown": OUTPUT, "render_drift": OUTPUT, "progress": OUTPUT,
    "inventory": OUTPUT, "dump": OUTPUT, "render_explain": OUTPUT, "render_doctor": OUTPUT,
    # the command line
    "cli": CLI, "__main__": CLI, "__init__": CLI,
}
# Third-party imports a layer may make (the rest: standard library only).
ALLOWED_LIBRARIES = {
    "pydantic": {SOURCE},
    "langcodes": {SOURCE},
    "yaml": {SOURCE, OUTPUT},
    "cryptography": {CORE},
    "httpx": {ADAPTER},
    "rich": {OUTPUT, CLI},
    "typer": {CLI},
}
MODULES = sorted(p.stem for p in PACKAGE.glob("*.py"))


def imports_of(module: str) -> tuple[set[str], set[str]]:
    """(package modules, top-level third-party names) that `module` imports anywhere in its file."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    own: set[str] = set()
    libraries: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                own.add(node.module.split(".")[0])
            else:  # from . import x
                own.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            top = node.module.split(".")[0]
            (own.add(node.module.split(".")[1]) if top == "provisioner" and "." in node.module else libraries.add(top))
        elif isinstance(node, ast.Import):
            libraries.update(alias.name.split(".")[0] for alias in node.names)
    return own - {module}, libraries


GRAPH = {m: imports_of(m)[0] for m in MODULES}


def test_every_module_has_a_layer():
    assert set(MODULES) == set(LAYERS), f"give each module a layer: {sorted(set(MODULES) ^ set(LAYERS))}"


@pytest.mark.parametrize("module", MODULES)
def test_a_module_imports_only_its_own_layer_or_lower_ones(module):
    upward = sorted(m for m in GRAPH[module] if LAYERS[m] > LAYERS[module])
    assert not upward, f"{module} (layer {LAYERS[module]}) imports {upward} from above"
    if LAYERS[module] == VOCABULARY:
        assert not GRAPH[module], f"{module} is vocabulary: it imports nothing of the package, not {sorted(GRAPH[module])}"


@pytest.mark.parametrize("module", MODULES)
def test_third_party_libraries_stay_in_their_layers(module):
    _, libraries = imports_of(module)
    wrong = sorted(lib for lib in libraries if lib in ALLOWED_LIBRARIES and LAYERS[module] not in ALLOWED_LIBRARIES[lib])
    assert not wrong, f"{module} (layer {LAYERS[module]}) imports {wrong}"


def test_only_the_open_webui_adapter_imports_httpx():
    assert {m for m in MODULES if "httpx" in imports_of(m)[1]} == {"client"}


def test_no_import_circle_among_the_modules():
    cycles: list[list[str]] = []
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for imported in sorted(GRAPH[module]):
            if state.get(imported) == "open":
                cycles.append([*path[path.index(imported):], imported] if imported in path else [module, imported])
            elif imported not in state:
                visit(imported, [*path, imported])
        state[module] = "done"

    for module in MODULES:
        if module not in state:
            visit(module, [module])
    assert not cycles, f"import circles: {cycles}"


def test_the_pure_core_loads_no_parser_network_or_terminal_library():
    """`import provisioner.plan` in a fresh interpreter: no yaml, pydantic, httpx, rich or typer."""
    code = (
        "import sys, provisioner.plan\n"
        "heavy = ('yaml', 'pydantic', 'httpx', 'rich', 'typer')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
        "print(sorted(m for m in sys.modules if m.startswith('provisioner.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    heavy, loaded = done.stdout.splitlines()
    assert heavy == "[]", f"import provisioner.plan loads {heavy}"
    assert all(LAYERS[m.removeprefix("provisioner.")] <= CORE for m in eval(loaded)), loaded  # noqa: S307
