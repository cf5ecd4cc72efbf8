"""Read one YAML file into plain data plus the line of every key and list item.

PyYAML's composed node tree knows where each node starts; we walk it once to build a map from
a path (keys and list indexes) to a 1-based line, so any later error can name its line.
Duplicate mapping keys, which PyYAML would silently collapse, are reported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import Problem

PathKey = tuple[str | int, ...]

MAX_FILE_BYTES = 1_000_000
# Aliases can make a small file expand into a huge tree ("billion laughs"); stop walking past this.
MAX_NODES = 200_000


class _TooLarge(Exception):
    pass


@dataclass(frozen=True)
class SourceFile:
    """A loaded YAML file: its data and where each piece of it came from."""

    path: str
    data: Any
    lines: dict[PathKey, int] = field(default_factory=dict)

    def line(self, *path: str | int) -> int | None:
        """The line of the longest prefix of `path` that exists in the file."""
        key: PathKey = tuple(path)
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key[:-1]
        return self.lines.get((), None)

    def problem(self, path: PathKey, message: str) -> Problem:
        return Problem(self.path, self.line(*path), format_path(path), message)


def format_path(path: PathKey) -> str:
    """('agents', 0, 'access') -> 'agents[0].access'."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def read_yaml(path: Path, display: str) -> tuple[SourceFile | None, list[Problem]]:
    """Parse `path`; on failure return no file and the problems that say why."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return None, [Problem(display, None, "", f"cannot read file: {exc.strerror or exc}")]
    if len(raw) > MAX_FILE_BYTES:
        return None, [Problem(display, None, "", f"file is larger than {MAX_FILE_BYTES} bytes")]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, [Problem(display, None, "", f"not UTF-8 text ({exc.reason} at byte {exc.start})")]
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.load(text, Loader=yaml.SafeLoader) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        reason = " ".join(str(part) for part in (exc.context, exc.problem) if part)
        return None, [Problem(display, line, "", f"YAML syntax error: {reason}")]
    except yaml.YAMLError as exc:  # e.g. a reader error on control characters
        return None, [Problem(display, None, "", f"YAML error: {exc}")]
    lines: dict[PathKey, int] = {}
    problems: list[Problem] = []
    if node is not None:
        lines[()] = node.start_mark.line + 1
        try:
            _walk(node, (), lines, problems, display, [0])
        except _TooLarge:
            return None, [Problem(display, None, "", f"YAML expands to more than {MAX_NODES} nodes (aliases?)")]
    return SourceFile(display, data, lines), problems


def _walk(
    node: yaml.Node,
    path: PathKey,
    lines: dict[PathKey, int],
    problems: list[Problem],
    display: str,
    count: list[int],
) -> None:
    count[0] += 1
    if count[0] > MAX_NODES:
        raise _TooLarge
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            child = (*path, key)
            line = key_node.start_mark.line + 1
            if key in seen:
                problems.append(Problem(display, line, format_path(child), "duplicate key"))
                continue
            seen.add(key)
            lines[child] = line
            _walk(value_node, child, lines, problems, display, count)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = (*path, index)
            lines[child] = item.start_mark.line + 1
            _walk(item, child, lines, problems, display, count)
