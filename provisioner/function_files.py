"""Open WebUI function files: the bundle and the user's own functions, read and checked.

Each file is one Open WebUI function; its stem is the function id. Open WebUI ignores the
frontmatter key `global`, so we read it here and converge `is_global` ourselves.

The bundle travels inside the installed package (`provisioner/bundle/`, copied from this repo's
`owui_functions/` at build time), so a team's own repo holds only blueprints and, optionally, a
folder of its own functions. Toggle filters are rendered from the feature definitions whenever a
plan is made (toggle_filters.py); nothing generated has to live in anyone's repo.

Layer: source.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import BlueprintError, Problem
from .hashing import content_hash
from .loader import not_a_file, unread_files
from .paths import resolved_inside
from .text import describe

_FRONTMATTER_LINE = re.compile(r"^\s*([a-z_]+):\s*(.*)\s*$", re.IGNORECASE)
_FUNCTION_CLASSES = ("Pipe", "Filter", "Action", "Event")  # Open WebUI's precedence order
MAX_FUNCTION_BYTES = 1_000_000


@dataclass(frozen=True)
class FunctionFile:
    """One function as the bundle defines it."""

    id: str
    path: str
    content: str
    name: str
    description: str
    is_global: bool
    kind: str  # pipe | filter | action | event
    priority: int | None = None  # a filter's Valves.priority default, when the file declares one

    @property
    def sha256(self) -> str:
        return content_hash(self.content)


def extract_frontmatter(content: str) -> dict[str, str]:
    """Open WebUI's own frontmatter rule: first line exactly `\"\"\"`, `key: value` lines."""
    lines = content.splitlines()
    if not lines or lines[0].strip() != '"""':
        return {}
    found: dict[str, str] = {}
    for line in lines[1:]:
        if '"""' in line:
            break
        match = _FRONTMATTER_LINE.match(line)
        if match:
            found[match.group(1).strip()] = match.group(2).strip()
    return found


def bundle_dir() -> Path:
    """Where the bundle's function files are: inside the installed wheel, or this repo's source."""
    package = Path(__file__).resolve().parent
    for candidate in (package / "bundle", package.parent / "owui_functions"):
        if (candidate / "aihub_feature_filter.py").is_file():
            return candidate
    raise BlueprintError(
        [
            Problem(
                str(package / "bundle"),
                None,
                "",
                "the function bundle is missing from this installation; reinstall aihub-provision",
            )
        ]
    )


def load_function_files(directory: Path) -> tuple[FunctionFile, ...]:
    """Every function file in `directory`, checked; raise BlueprintError with all problems."""
    problems: list[Problem] = []
    if not directory.is_dir():
        raise BlueprintError([Problem(str(directory), None, "", "function directory not found")])
    files: list[FunctionFile] = []
    for path in sorted(directory.glob("*.py")):
        loaded = _load_one(path, problems)
        if loaded:
            files.append(loaded)
    if problems:
        raise BlueprintError(problems)
    return tuple(files)


def _load_one(path: Path, problems: list[Problem]) -> FunctionFile | None:
    display = str(path)
    function_id = path.stem
    if not function_id.isidentifier() or function_id != function_id.lower() or not function_id.isascii():
        foreign = next((c for c in function_id if not c.isascii()), None)
        why = f" (it holds {describe(foreign)}, which is not ASCII)" if foreign else ""
        problems.append(
            Problem(
                display,
                None,
                "id",
                f"{function_id!r} is not a valid function id{why}: use a lowercase ASCII Python identifier as the file name",
            )
        )
        return None
    try:
        inside = resolved_inside(path.parent, path.name)
    except ValueError:
        inside = path  # a symlink loop: is_file() below says so
    if inside is None:
        problems.append(
            Problem(
                display,
                None,
                "",
                f"a symlink to {path.resolve()}, outside the functions folder; keep function files in it",
            )
        )
        return None
    if not path.is_file():  # follows symlinks; never opens a FIFO or a device
        problems.append(Problem(display, None, "", not_a_file(path)))
        return None
    try:
        with path.open("rb") as handle:  # read at most one byte past the limit
            raw = handle.read(MAX_FUNCTION_BYTES + 1)
    except OSError as exc:
        problems.append(Problem(display, None, "", f"cannot read: {exc.strerror or exc}"))
        return None
    if len(raw) > MAX_FUNCTION_BYTES:
        problems.append(Problem(display, None, "", f"larger than {MAX_FUNCTION_BYTES} bytes"))
        return None
    try:
        content = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        problems.append(
            Problem(display, line, "", f"not UTF-8 text (byte {raw[exc.start]:#04x}); save the file as UTF-8")
        )
        return None
    return parse_function(content, display, function_id, problems)


# Python's own byte-code cache, never a function: not entered, no note.
_IGNORED_DIRS = frozenset({"__pycache__"})


def skipped_function_files(directory: Path, files: tuple[FunctionFile, ...]) -> list[Problem]:
    """A note for each file in a functions folder that is not uploaded (`x.PY`, `x.py.bak`,
    `sub/nested.py`): a function saved under another name would otherwise vanish without a word."""
    read = {Path(f.path).resolve() for f in files}
    return unread_files(directory, read, why=_why_skipped, ignored=_IGNORED_DIRS)


def _why_skipped(path: Path) -> str:
    if path.name.startswith("."):
        return "hidden file, not uploaded"
    if path.suffix == ".py":
        return "not uploaded: functions are read only from the top level of the functions folder"
    if path.suffix.lower() == ".py":
        return "not uploaded: a function file's name ends in .py (lowercase)"
    return "not uploaded: not a .py file"


def parse_function(content: str, display: str, function_id: str, problems: list[Problem]) -> FunctionFile | None:
    """A function's source -> FunctionFile, or None with the problems appended."""
    try:
        tree = ast.parse(content, filename=display)
    except SyntaxError as exc:
        problems.append(Problem(display, exc.lineno, "", f"Python syntax error: {exc.msg}"))
        return None
    classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    kind = next((name.lower() for name in _FUNCTION_CLASSES if name in classes), None)
    if kind is None:
        problems.append(Problem(display, None, "", "defines no Pipe, Filter, Action or Event class"))
        return None
    manifest = extract_frontmatter(content)
    if not manifest:
        problems.append(
            Problem(display, 1, "frontmatter", 'missing: the file must start with a """ docstring of key: value lines')
        )
        return None
    global_value = manifest.get("global", "false").lower()
    if global_value not in ("true", "false"):
        problems.append(
            Problem(
                display,
                _frontmatter_line(content, "global"),
                "frontmatter.global",
                f"must be true or false, not {manifest['global']!r}",
            )
        )
        return None
    return FunctionFile(
        id=function_id,
        path=display,
        content=content,
        name=manifest.get("title") or function_id,
        description=manifest.get("description", ""),
        is_global=global_value == "true",
        kind=kind,
        priority=valves_priority(tree) if kind == "filter" else None,
    )


def valves_priority(tree: ast.Module) -> int | None:
    """The default of `Filter.Valves.priority` (`priority: int = 10` or `= Field(default=10)`).

    Open WebUI up to 0.8 reads a filter's priority only from its stored valves, so sync stores
    this default there (see compat.Compat.filter_priority_in_valves)."""
    for node in tree.body:
        if not (isinstance(node, ast.ClassDef) and node.name == "Filter"):
            continue
        for inner in node.body:
            if not (isinstance(inner, ast.ClassDef) and inner.name == "Valves"):
                continue
            for item in inner.body:
                if (
                    isinstance(item, ast.AnnAssign)
                    and isinstance(item.target, ast.Name)
                    and item.target.id == "priority"
                ):
                    return _int_default(item.value)
    return None


def _int_default(value: ast.expr | None) -> int | None:
    if isinstance(value, ast.Call):
        given = [k.value for k in value.keywords if k.arg == "default"] or value.args[:1]
        value = given[0] if given else None
    if isinstance(value, ast.Constant) and isinstance(value.value, int) and not isinstance(value.value, bool):
        return value.value
    return None


def _frontmatter_line(content: str, key: str) -> int | None:
    for number, line in enumerate(content.splitlines()[1:], start=2):
        if '"""' in line:
            return None
        if re.match(rf"^\s*{key}\s*:", line, re.IGNORECASE):
            return number
    return None
