"""The Recorder's own invariant is an explicit check (issue 28, item 4): while text is open, the
last segment is that text. It was an ``assert``, which ``python -O`` strips; a broken invariant
must raise the recorder's own error whatever the interpreter's flags, never write into another
segment."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.pipe_support import PIPE_FILE, pipe_module

P = pipe_module
ROOT = Path(__file__).resolve().parents[2]


def test_text_while_another_segment_is_last_raises_the_recorders_error() -> None:
    recorder = P.Recorder(scrubber=P.Scrubber())
    recorder.text("Hello")
    recorder.segments.append(P.Error("a segment a bug put after the open text"))
    with pytest.raises(P.RecorderStateError, match="last segment is Error"):
        recorder.text(" world")
    assert recorder.segments[-1] == P.Error("a segment a bug put after the open text")


def test_the_check_holds_under_python_dash_o(tmp_path: Path) -> None:
    """Under -O an assert is gone; the explicit check is not."""
    child = textwrap.dedent(
        """
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("aihub_agent_pipe", sys.argv[1])
        module = importlib.util.module_from_spec(spec)
        sys.modules["aihub_agent_pipe"] = module
        spec.loader.exec_module(module)
        assert False, "unreachable under -O"
        recorder = module.Recorder(scrubber=module.Scrubber())
        recorder.text("Hello")
        recorder.segments.append(module.Error("x"))
        try:
            recorder.text(" world")
        except module.RecorderStateError:
            print("checked")
        """
    )
    (tmp_path / "child.py").write_text(child, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-O", str(tmp_path / "child.py"), str(PIPE_FILE)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "checked"


def test_no_module_of_the_pipe_guards_anything_with_assert() -> None:
    found = [
        f"agent_pipe/{path.name}:{node.lineno}"
        for path in sorted((ROOT / "agent_pipe").glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Assert)
    ]
    assert not found, f"python -O strips these checks; raise an error instead: {found}"
