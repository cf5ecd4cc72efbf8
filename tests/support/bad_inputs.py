"""The bad-input corpus: malformed and hostile blueprint sets, each with the one error it must give.

Each case is a directory under tests/data/bad_blueprints/<case>/ with
- `blueprints/`: the blueprint directory (absent when the case is "no directory at all");
- `functions/` (optional): files laid over the standard function bundle;
- `own_functions/` (optional): the user's own functions folder (`--functions`);
- `expect.yaml`: `about` (what is wrong), `errors` (each `file`, `line`, `field`, `message`, in
  the order provision prints them; `message` is a substring), and optionally
  `remove_functions: [file, ...]`, `needs_instance: true`
  (only `sync` can tell: groups and environment variables live outside the files), `env:`
  (variables sync runs with; `$OPENWEBUI_TOKEN` stands for the admin token in use), `xfail:
  <reason>` (a known bug outside the loader; the case passes once it is fixed).

What git cannot hold (symlink loops, FIFOs, empty directories, 2 MB files, bytes that are not
text) is added at test time by the builder of the same name in BUILDERS.

A case runs in a workspace directory: `blueprints/` and `functions/` side by side, so the CLI,
run from there with `-p blueprints --bundle functions`, prints the paths `expect.yaml` names.
"""

from __future__ import annotations

import os
import shutil
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.builders import FEATURE_FILTER, REPO

CASES_DIR = REPO / "tests" / "data" / "bad_blueprints"
AGENT_PIPE = REPO / "owui_functions" / "aihub_agent_pipe.py"
ARGS = ["-p", "blueprints", "--bundle", "functions", "--functions", "own_functions"]


@dataclass(frozen=True)
class Expected:
    """One error provision must print: `file:line: field: ...message...`."""

    file: str
    line: int | None
    field: str
    message: str

    @property
    def prefix(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return where + (f": {self.field}:" if self.field else ":") + " "


@dataclass(frozen=True)
class Case:
    name: str
    about: str
    errors: tuple[Expected, ...]
    remove_functions: tuple[str, ...] = ()
    needs_instance: bool = False
    xfail: str | None = None
    env: tuple[tuple[str, str], ...] = ()

    def environment(self, token: str) -> dict[str, str]:
        """The case's variables, with `$OPENWEBUI_TOKEN` replaced by `token`."""
        return {name: value.replace("$OPENWEBUI_TOKEN", token) for name, value in self.env}

    @property
    def dir(self) -> Path:
        return CASES_DIR / self.name

    def param(self) -> Any:
        """The case as a pytest parameter, strictly expected to fail while its bug stands."""
        marks = [pytest.mark.xfail(strict=True, reason=self.xfail)] if self.xfail else []
        return pytest.param(self, id=self.name, marks=marks)


def load_cases() -> list[Case]:
    cases = []
    for expect in sorted(CASES_DIR.glob("*/expect.yaml")):
        data: dict[str, Any] = yaml.safe_load(expect.read_text(encoding="utf-8"))
        cases.append(
            Case(
                name=expect.parent.name,
                about=data["about"],
                errors=tuple(
                    Expected(e["file"], e.get("line"), e.get("field", ""), e["message"]) for e in data["errors"]
                ),
                remove_functions=tuple(data.get("remove_functions", ())),
                needs_instance=data.get("needs_instance", False),
                xfail=data.get("xfail"),
                env=tuple(sorted((data.get("env") or {}).items())),
            )
        )
    return cases


def make_workspace(case: Case, root: Path) -> Path:
    """Copy the case into `root`, build the function bundle around it, run its builder."""
    root.mkdir(parents=True, exist_ok=True)
    if (case.dir / "blueprints").is_dir():
        shutil.copytree(case.dir / "blueprints", root / "blueprints", symlinks=True)
    functions = root / "functions"
    functions.mkdir()
    shutil.copy(FEATURE_FILTER, functions / FEATURE_FILTER.name)
    shutil.copy(AGENT_PIPE, functions / AGENT_PIPE.name)
    if (case.dir / "functions").is_dir():
        shutil.copytree(case.dir / "functions", functions, dirs_exist_ok=True)
    if (case.dir / "own_functions").is_dir():
        shutil.copytree(case.dir / "own_functions", root / "own_functions")
    for name in case.remove_functions:
        (functions / name).unlink()
    builder = BUILDERS.get(case.name)
    if builder:
        builder(root)
    return root


def check_stderr(case: Case, err: str) -> None:
    """stderr is exactly the header and one line per expected error, in order; no traceback."""
    assert "Traceback" not in err
    count = len(case.errors)
    lines = err.splitlines()
    assert lines[0] == f"Error: {count} problem{'s' if count != 1 else ''} in the blueprints:", err
    assert len(lines) == count + 1, err
    for line, expected in zip(lines[1:], case.errors, strict=True):
        assert line.startswith("  " + expected.prefix), f"{line!r} does not start with {'  ' + expected.prefix!r}"
        assert expected.message in line[2 + len(expected.prefix) :], f"{expected.message!r} not in {line!r}"


# ------------------------------------------------------------------ builders


def _demo(root: Path) -> Path:
    return root / "blueprints" / "demo.yaml"


def _png(size: int) -> bytes:
    """A PNG signature and header chunk padded to `size` bytes: an image as far as sniffing goes."""
    head = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)
    return head + b"\0" * (size - len(head))


def _control_character(root: Path) -> None:
    path = _demo(root)
    path.write_text(path.read_text().replace("name: Demo\n", "name: De\x1b[2Jmo\n"))


def _not_utf8(root: Path) -> None:
    path = _demo(root)
    path.write_bytes(path.read_bytes().replace(b"name: Demo\n", "name: Démo\n".encode("latin-1")))


def _huge_file(root: Path) -> None:
    with _demo(root).open("a") as handle:
        handle.write(("# " + "x" * 98 + "\n") * 20_000)  # 2 MB of comments


def _binary_garbage(root: Path) -> None:
    _demo(root).write_bytes(_png(4096))


def _nesting_bomb(root: Path) -> None:
    _demo(root).write_text("id: demo\ndescription: " + "[" * 100_000 + "]" * 100_000 + "\n")


def _empty_directory(root: Path) -> None:
    (root / "blueprints").mkdir()


def _symlink_loop(root: Path) -> None:
    (root / "blueprints" / "loop.yaml").symlink_to("loop.yaml")


def _directory_named_yaml(root: Path) -> None:
    (root / "blueprints" / "extra.yaml").mkdir()


def _fifo(path: Path) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs on this platform")
        os.mkfifo(root / path)

    return build


def _unreadable(root: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every file; run as a normal user to check unreadable files")
    _demo(root).chmod(0)


def _device(root: Path) -> None:
    (root / "blueprints" / "capabilities.yaml").symlink_to("/dev/zero")


def _oversized_icon(root: Path) -> None:
    icons = root / "blueprints" / "icons"
    icons.mkdir(exist_ok=True)
    (icons / "huge.png").write_bytes(_png(2_000_000))


def _icon_loop(root: Path) -> None:
    icons = root / "blueprints" / "icons"
    icons.mkdir(exist_ok=True)
    (icons / "loop.png").symlink_to("loop.png")


def _non_ascii_function_id(root: Path) -> None:
    """A copy of the bundle's feature filter under a look-alike name; kept out of git, as the file
    name itself is the bad input."""
    (root / "own_functions").mkdir(exist_ok=True)
    shutil.copy(FEATURE_FILTER, root / "own_functions" / "\u0430ihub_feature_filter.py")


def _function_symlink_out(root: Path) -> None:
    (root / "own_functions").mkdir(exist_ok=True)
    (root / "own_functions" / "leak.py").symlink_to(FEATURE_FILTER)


BUILDERS: dict[str, Callable[[Path], None]] = {
    "yaml_control_character": _control_character,
    "yaml_not_utf8": _not_utf8,
    "yaml_huge_file": _huge_file,
    "yaml_binary_garbage": _binary_garbage,
    "yaml_nesting_bomb": _nesting_bomb,
    "empty_directory": _empty_directory,
    "symlink_loop": _symlink_loop,
    "yaml_file_is_a_directory": _directory_named_yaml,
    "yaml_file_is_a_fifo": _fifo(Path("blueprints/pipe.yaml")),
    "yaml_file_unreadable": _unreadable,
    "capabilities_is_a_device": _device,
    "icon_oversized": _oversized_icon,
    "icon_symlink_loop": _icon_loop,
    "function_file_is_a_fifo": _fifo(Path("functions/extra_filter.py")),
    "function_id_not_ascii": _non_ascii_function_id,
    "function_symlink_out_of_the_folder": _function_symlink_out,
    # generated for an older title of the feature, or for a feature that is gone
}
