"""The provisioner's dependencies point one way (docs/architecture.md, "Layers").

Every module's docstring names its layer (a line `Layer: core.`), and this test reads it: a
module may import only modules of its own layer or a lower one, and the imports form no circle.
Imports are read with ast from the source (every `import`, typing-only ones included), so the
test sees what a reader sees, not only what ran. docs/architecture.md's table of the layers is
checked against the docstrings too.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "provisioner"

# The layers, lowest first, as the docstrings name them.
LAYER_NAMES = ("vocabulary", "source", "core", "adapter", "pipeline", "output", "cli")
VOCABULARY, SOURCE, CORE, ADAPTER, PIPELINE, OUTPUT, CLI = range(len(LAYER_NAMES))
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


def module_name(path: Path) -> str:
    """`openwebui/client.py` -> `openwebui.client`; a package's __init__ is the package (the
    top package's is `__init__`)."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


FILES = {
    module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if (p.parent / "__init__.py").is_file()
}  # templates/ are not modules
MODULES = sorted(FILES)
LAYER_LINE = re.compile(r"^Layer: (\w+)\.$", re.MULTILINE)


def layer_of(module: str) -> int:
    docstring = ast.get_docstring(ast.parse(FILES[module].read_text(encoding="utf-8"))) or ""
    found = LAYER_LINE.findall(docstring)
    path = FILES[module].relative_to(ROOT)
    assert len(found) == 1, f"{path}: its docstring needs one line `Layer: <{'|'.join(LAYER_NAMES)}>.`"
    assert found[0] in LAYER_NAMES, f"{path}: no layer {found[0]!r}; the layers: {LAYER_NAMES}"
    return LAYER_NAMES.index(found[0])


def package_of(module: str) -> list[str]:
    """The package a module's relative imports start from."""
    parts = [] if module == "__init__" else module.split(".")
    return parts if FILES[module].name == "__init__.py" else parts[:-1]


def own_module(parts: list[str]) -> str | None:
    """The longest dotted prefix of `parts` that is a module of the package."""
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in FILES:
            return ".".join(parts[:end])
    return None


def imports_of(module: str) -> tuple[set[str], set[str]]:
    """(package modules, top-level third-party names) that `module` imports anywhere in its file."""
    tree = ast.parse(FILES[module].read_text(encoding="utf-8"))
    own: set[str] = set()
    libraries: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            dotted = (node.module or "").split(".") if node.module else []
            if node.level:
                package = package_of(module)
                parts = package[: len(package) - (node.level - 1)] + dotted
            elif dotted[:1] == ["provisioner"]:
                parts = dotted[1:]
            else:
                libraries.add(dotted[0])
                continue
            for alias in node.names:  # `from . import x`, `from .openwebui import client`: modules
                found = own_module([*parts, alias.name]) or own_module(parts)
                if found:
                    own.add(found)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                found = own_module(parts[1:]) if parts[0] == "provisioner" else None
                (own.add(found) if found else libraries.add(parts[0]))
    return own - {module}, libraries


LAYERS = {m: layer_of(m) for m in MODULES}
GRAPH = {m: imports_of(m)[0] for m in MODULES}


def test_the_architecture_page_lists_each_layers_modules_as_the_docstrings_say():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d)\. [^|]+\| ([^|]+) \|", text, re.MULTILINE)
    assert len(rows) == len(LAYER_NAMES), "docs/architecture.md's Layers table has one row per layer"
    for number, modules in rows:
        listed = set(re.findall(r"`([\w.]+)`", modules))
        wanted = {m for m, layer in LAYERS.items() if layer == int(number)}
        assert listed == wanted, (
            f"docs/architecture.md, layer {number}: add {sorted(wanted - listed)}, drop {sorted(listed - wanted)}"
        )


@pytest.mark.parametrize("module", MODULES)
def test_a_module_imports_only_its_own_layer_or_lower_ones(module):
    upward = sorted(m for m in GRAPH[module] if LAYERS[m] > LAYERS[module])
    assert not upward, f"{module} (layer {LAYERS[module]}) imports {upward} from above"
    if LAYERS[module] == VOCABULARY:
        assert not GRAPH[module], (
            f"{module} is vocabulary: it imports nothing of the package, not {sorted(GRAPH[module])}"
        )


@pytest.mark.parametrize("module", MODULES)
def test_third_party_libraries_stay_in_their_layers(module):
    _, libraries = imports_of(module)
    wrong = sorted(
        lib for lib in libraries if lib in ALLOWED_LIBRARIES and LAYERS[module] not in ALLOWED_LIBRARIES[lib]
    )
    assert not wrong, f"{module} (layer {LAYERS[module]}) imports {wrong}"


def test_only_the_open_webui_adapter_imports_httpx():
    assert {m for m in MODULES if "httpx" in imports_of(m)[1]} == {"openwebui.client"}


def test_no_import_circle_among_the_modules():
    cycles: list[list[str]] = []
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for imported in sorted(GRAPH[module]):
            if state.get(imported) == "open":
                cycles.append([*path[path.index(imported) :], imported] if imported in path else [module, imported])
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
    assert all(LAYERS[m.removeprefix("provisioner.")] <= CORE for m in eval(loaded)), loaded  # noqa: S307 (the child printed a list)
