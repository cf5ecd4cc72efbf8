"""scripts/build-pipe: the one file Open WebUI runs, built from the agent_pipe/ modules.

The pipe's other tests test the built file (what Open WebUI runs); these test the build: that
it is deterministic and up to date, that the joined file holds exactly the modules' names and
none of their imports of each other, that it runs where neither agent_pipe nor provisioner can
be imported, and that the build refuses what would not survive the join.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from provisioner import contract
from tests.support.loading import load_file
from tests.support.pipe_support import FINISHED, SSEStub, T, events

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "scripts" / "build-pipe"
BUILT = ROOT / "owui_functions" / "aihub_agent_pipe.py"
build_pipe = load_file(BUILD, "build_pipe")


def top_level_names(tree: ast.Module) -> set[str]:
    """What the file's top-level statements bind, imports left out."""
    return {name for node in tree.body for name in build_pipe.bound_names(node)}


def imported_names(tree: ast.Module) -> set[str]:
    return {
        alias.asname or alias.name.split(".")[0]
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }


def module_trees() -> list[ast.Module]:
    return [ast.parse((ROOT / "agent_pipe" / f"{m}.py").read_text(encoding="utf-8")) for m in build_pipe.MODULES]


def contract_imports() -> dict[str, str]:
    """The names the modules import from provisioner.contract -> the module that does."""
    found = {}
    for module, tree in zip(build_pipe.MODULES, module_trees(), strict=True):
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module == "provisioner.contract":
                found.update({alias.name: module for alias in node.names})
    return found


def run_build(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BUILD), "--root", str(root), *args], capture_output=True, text=True, timeout=60
    )


def test_two_builds_are_byte_identical_and_equal_the_committed_file() -> None:
    first, second = build_pipe.build(ROOT), build_pipe.build(ROOT)
    assert first == second
    assert first == BUILT.read_text(encoding="utf-8"), "run scripts/build-pipe"


def test_check_passes_on_the_committed_file() -> None:
    result = run_build(ROOT, "--check")
    assert result.returncode == 0, result.stderr
    assert "up to date" in result.stdout


def test_the_built_file_imports_nothing_of_the_package_or_of_provision() -> None:
    tree = ast.parse(BUILT.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"line {node.lineno}: relative import"
            assert (node.module or "").split(".")[0] not in ("agent_pipe", "provisioner"), f"line {node.lineno}"
        elif isinstance(node, ast.Import):
            assert not {a.name.split(".")[0] for a in node.names} & {"agent_pipe", "provisioner"}, node.lineno


def test_the_built_file_binds_exactly_the_modules_top_level_names() -> None:
    built = ast.parse(BUILT.read_text(encoding="utf-8"))
    modules = module_trees()
    defined = set().union(*(top_level_names(t) for t in modules))
    assert top_level_names(built) == defined | set(contract_imports())
    internal = {"agent_pipe", "provisioner"}
    external = set()
    for tree in modules:
        for node in tree.body:
            if isinstance(node, ast.Import) or (
                isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] not in internal
            ):
                external |= imported_names(ast.Module(body=[node], type_ignores=[]))
    assert imported_names(built) == external


def test_the_contract_constants_are_inlined_with_the_contracts_values() -> None:
    """The modules import what provision and the pipe agree on from provisioner.contract (no hand
    copy to compare); the built file holds each one's definition, with the contract's value."""
    names = contract_imports()
    assert "METADATA_KEY" in names
    built = load_file(BUILT, "aihub_agent_pipe_built", keep=False)
    for name in names:
        assert getattr(built, name) == getattr(contract, name)
    for module, tree in zip(build_pipe.MODULES, module_trees(), strict=True):
        copies = top_level_names(tree) & set(vars(contract))
        assert not copies, f"agent_pipe/{module}.py copies {sorted(copies)}: import them from provisioner.contract"


def test_the_built_file_starts_with_the_frontmatter_then_the_banner() -> None:
    text = BUILT.read_text(encoding="utf-8")
    frontmatter = (ROOT / "agent_pipe" / "__init__.py").read_text(encoding="utf-8").split('"""\n', 2)
    assert text.startswith('"""\n' + frontmatter[1] + '"""\n\n' + build_pipe.BANNER)
    for module in build_pipe.MODULES:
        assert text.count(f"\n# --- begin agent_pipe/{module}.py ---\n") == 1


def test_the_header_lists_the_modules_the_build_joins_in_its_order() -> None:
    """The built file's header comment (agent_pipe/__init__.py) names the modules a reader will
    find under their `# --- begin` lines: exactly MODULES, in order (it had lost three)."""
    header = (ROOT / "agent_pipe" / "__init__.py").read_text(encoding="utf-8").split("(scripts/build-pipe):\n", 1)
    assert len(header) == 2, "agent_pipe/__init__.py: the module list starts after '(scripts/build-pipe):'"
    listed = []
    for line in header[1].splitlines():
        if not line.startswith("#   "):
            break
        listed.append(line.split()[1])
    assert tuple(listed) == build_pipe.MODULES


CHILD = textwrap.dedent(
    """
    import asyncio, importlib.abc, importlib.util, json, sys

    class Blocked(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("agent_pipe", "provisioner"):
                raise ImportError(f"{name} is not importable here")
            return None

    sys.meta_path.insert(0, Blocked())
    for name in ("agent_pipe", "provisioner"):
        try:
            __import__(name)
        except ImportError:
            pass
        else:
            raise SystemExit(f"{name} was importable")
    path, url = sys.argv[1], sys.argv[2]
    spec = importlib.util.spec_from_file_location("aihub_agent_pipe", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["aihub_agent_pipe"] = module  # as Open WebUI does: pydantic looks the Valves up here
    spec.loader.exec_module(module)
    pipe = module.Pipe()
    agent = {"id": "ops.desk", "name": "Desk", "transport": "agui", "url": url}
    pipe.valves = pipe.Valves(AGENTS=json.dumps([agent]), HISTORY_SIGNING_KEY="k" * 32)

    async def chat():
        body = {"model": "aihub_agent_pipe.ops.desk", "messages": [{"role": "user", "content": "Hi?"}], "stream": True}
        metadata = {"chat_id": "c-1", "message_id": "m-1"}
        return [c async for c in pipe.pipe(body=body, __user__={"id": "u-1"}, __metadata__=metadata)]

    print(json.dumps({"chunks": [c for c in asyncio.run(chat()) if isinstance(c, str)], "path": sys.path}))
    """
)


def test_the_built_file_answers_a_chat_where_neither_the_package_nor_provision_imports(
    tmp_path: Path, sse_stub: SSEStub
) -> None:
    """A fresh interpreter (-I: no PYTHONPATH, no cwd on sys.path), the built file copied alone into
    a temp dir, agent_pipe and provisioner made unimportable: the file still answers a chat."""
    sse_stub.behaviour.data = events(T("Hello from the agent."), FINISHED)
    copy = tmp_path / "aihub_agent_pipe.py"
    shutil.copy(BUILT, copy)
    (tmp_path / "child.py").write_text(CHILD, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-I", str(tmp_path / "child.py"), str(copy), sse_stub.url],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout.splitlines()[-1])
    assert "".join(answer["chunks"]) == "Hello from the agent."
    assert not any(Path(p).resolve() == ROOT for p in answer["path"] if p)
    assert sse_stub.requests[0]["json"]["messages"][-1]["content"] == "Hi?"


# --- what the build refuses (on a temp copy of the package) ---------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of what the build reads and writes."""
    shutil.copytree(ROOT / "agent_pipe", tmp_path / "agent_pipe", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "provisioner").mkdir()
    shutil.copy(ROOT / "provisioner" / "contract.py", tmp_path / "provisioner" / "contract.py")
    (tmp_path / "owui_functions").mkdir()
    shutil.copy(BUILT, tmp_path / "owui_functions" / BUILT.name)
    return tmp_path


def append(path: Path, text: str) -> int:
    """Append `text` to a module; the line number it starts on."""
    before = path.read_text(encoding="utf-8")
    path.write_text(before + text, encoding="utf-8")
    return before.count("\n") + 1


def test_check_fails_on_a_stale_file_and_says_what_to_run(tree: Path) -> None:
    append(tree / "agent_pipe" / "failures.py", "\n\ndef _added() -> None:\n    pass\n")
    result = run_build(tree, "--check")
    assert result.returncode == 1
    assert "run scripts/build-pipe" in result.stderr
    assert "+def _added() -> None:" in result.stderr
    assert run_build(tree).returncode == 0
    assert run_build(tree, "--check").returncode == 0
    assert "def _added() -> None:" in (tree / "owui_functions" / BUILT.name).read_text(encoding="utf-8")


def test_the_build_refuses_a_name_two_modules_define(tree: Path) -> None:
    line = append(tree / "agent_pipe" / "pipe.py", "\n\ndef random_hex() -> str:\n    return ''\n")
    result = run_build(tree)
    assert result.returncode == 2
    assert f"agent_pipe/pipe.py:{line + 2}: top-level name random_hex is already bound at agent_pipe/helpers.py:" in (
        result.stderr
    )


def test_the_build_refuses_a_star_import(tree: Path) -> None:
    path = tree / "agent_pipe" / "failures.py"
    path.write_text("from os.path import *\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    result = run_build(tree)
    assert result.returncode == 2
    assert "agent_pipe/failures.py:1: star import `from os.path import *`" in result.stderr


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("from agent_pipe.helpers import random_hex as rh\n", "aliased import `random_hex as rh`"),
        ("from .helpers import random_hex\n", "relative import"),
        ("import agent_pipe.helpers\n", "`import agent_pipe.helpers`"),
        ("from agent_pipe.helpers import no_such_name\n", "agent_pipe.helpers defines no top-level no_such_name"),
        ("from agent_pipe.nowhere import x\n", "agent_pipe.nowhere is not in scripts/build-pipe's MODULES"),
        ("from provisioner.loader import load\n", "import from provisioner.loader: the uploaded file can import only"),
    ],
)
def test_the_build_refuses_imports_it_cannot_join(tree: Path, line: str, says: str) -> None:
    path = tree / "agent_pipe" / "failures.py"
    path.write_text(line + path.read_text(encoding="utf-8"), encoding="utf-8")
    result = run_build(tree)
    assert result.returncode == 2
    assert f"agent_pipe/failures.py:1: {says}" in result.stderr
    assert (tree / "owui_functions" / BUILT.name).read_bytes() == BUILT.read_bytes()  # nothing written


def test_the_build_refuses_a_module_missing_from_its_list(tree: Path) -> None:
    (tree / "agent_pipe" / "extra.py").write_text('"""An extra module."""\n', encoding="utf-8")
    result = run_build(tree)
    assert result.returncode == 2
    assert "agent_pipe/extra.py: not in scripts/build-pipe's MODULES" in result.stderr


def test_the_tests_load_a_file_without_their_own_future_flags() -> None:
    """Open WebUI executes the file as it is: an annotation that names a class defined further
    down fails there at import. The tests' loader must fail the same way, not inherit its own
    `from __future__ import annotations` (it did, and hid exactly that in a built pipe)."""
    from tests.support.loading import load_source

    with pytest.raises(NameError, match="Later"):
        load_source("def f(x: Later) -> None: ...\n\n\nclass Later: ...\n", "forward_annotation", keep=False)
