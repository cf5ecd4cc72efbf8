"""Read one YAML file into plain data plus the line of every key and list item.

PyYAML's composed node tree knows where each node starts; we walk it once, before building any
Python data, to map each path (keys and list indexes) to a 1-based line, so any later error can
name its line. The same walk refuses what PyYAML would accept silently or choke on later:
duplicate keys (collapsed), keys that are not text (`123:`, `yes:`), any explicit tag
(`!!python/object`, `!!binary`, even `!!str`), alias bombs and recursive aliases.

Layer: source.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import Problem

PathKey = tuple[str | int, ...]

MAX_FILE_BYTES = 1_000_000
# Aliases can make a small file expand into a huge tree ("billion laughs"); stop walking past this.
MAX_NODES = 50_000
# A blueprint is at most a few levels deep; anything deeper is a mistake or a recursive alias.
MAX_DEPTH = 32

_TAG_PREFIX = "tag:yaml.org,2002:"
_MERGE_TAG = _TAG_PREFIX + "merge"
_SAFE_TAGS = frozenset(tag for tag in yaml.SafeLoader.yaml_constructors if tag)
_TOO_DEEP = f"YAML nested more than {MAX_DEPTH} levels deep; a blueprint needs a handful"
_KEY_KINDS = {"int": "a number", "float": "a number", "bool": "a boolean", "null": "null", "timestamp": "a date"}


class _Stop(Exception):
    """The walk cannot go on; the file is reported with this one problem."""

    def __init__(self, line: int, path: PathKey, message: str) -> None:
        self.line, self.field, self.message = line, format_path(path), message


class _TooDeepError(yaml.MarkedYAMLError):
    pass


class _Loader(yaml.SafeLoader):
    """SafeLoader that stops composing past MAX_DEPTH, with a line, before Python's recursion
    limit, and remembers every node that carries an explicit tag (`!!binary`, `!!str`, `!foo`)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self.tagged: dict[int, str] = {}  # id() of each node written with a tag -> the tag

    # index: an int in a sequence, the key's node in a mapping (PyYAML's stubs say int)
    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        if self._depth > MAX_DEPTH:
            raise _TooDeepError(problem_mark=event.start_mark)
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if not isinstance(event, yaml.AliasEvent) and getattr(event, "tag", None) is not None:
            self.tagged[id(node)] = event.tag
        return node


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
    """Parse `path`; on failure return no data (or no file) and the problems that say why."""
    try:
        with path.open("rb") as handle:  # read at most one byte past the limit
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return None, [Problem(display, None, "", f"cannot read file: {exc.strerror or exc}")]
    if len(raw) > MAX_FILE_BYTES:
        return None, [Problem(display, None, "", f"file is larger than {MAX_FILE_BYTES} bytes")]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        return None, [
            Problem(display, line, "", f"not UTF-8 text (byte {raw[exc.start]:#04x}); save the file as UTF-8")
        ]
    loader: _Loader | None = None
    try:
        loader = _Loader(text)  # the reader checks for control characters here
        node = loader.get_single_node()
    except _TooDeepError as exc:
        mark = exc.problem_mark
        return None, [Problem(display, mark.line + 1 if mark else None, "", _TOO_DEEP)]
    except yaml.MarkedYAMLError as exc:
        return None, [_syntax_problem(display, exc)]
    except yaml.reader.ReaderError as exc:  # control characters and the like
        line = text.count("\n", 0, exc.position) + 1
        char = exc.character if isinstance(exc.character, int) else ord(exc.character[:1] or b"\0")
        return None, [Problem(display, line, "", f"control character U+{char:04X} is not allowed in YAML; remove it")]
    except RecursionError:  # not expected past _Loader's limit; never a traceback
        return None, [Problem(display, None, "", _TOO_DEEP)]
    finally:
        if loader is not None:
            loader.dispose()
    if node is None or loader is None:
        return SourceFile(display, None, {}), []
    walker = _Walker(display, loader.tagged)
    try:
        walker.walk(node, (), 0)
    except _Stop as exc:
        return None, [Problem(display, exc.line, exc.field, exc.message)]
    if walker.problems:  # the data would not be what the author meant
        return SourceFile(display, None, walker.lines), walker.problems
    try:  # build the data from the tree already composed: one parse, not two
        data = yaml.SafeLoader("").construct_document(node)
    except yaml.MarkedYAMLError as exc:  # e.g. a merge key `<<:` with a value that is not a mapping
        return None, [_syntax_problem(display, exc)]
    except (yaml.YAMLError, ValueError, KeyError, OverflowError) as exc:  # e.g. `!!int abc`
        return None, [Problem(display, None, "", f"YAML value cannot be read: {exc}")]
    return SourceFile(display, data, walker.lines), []


def _syntax_problem(display: str, exc: yaml.MarkedYAMLError) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark else None
    column = f" at column {mark.column + 1}" if mark else ""
    reason = str(exc.problem or exc.context)
    if exc.problem and exc.context:  # "while parsing a flow sequence", where it started
        start = exc.context_mark.line + 1 if exc.context_mark else None
        reason += f" ({exc.context}{f' started on line {start}' if start and start != line else ''})"
    if "expected a single document" in reason:
        return Problem(
            display, line, "", "a second YAML document starts here ('---'); put each blueprint in a file of its own"
        )
    if "'\\t'" in reason:
        reason += "; indent with spaces, not tabs"
    hint = syntax_hint(reason)
    return Problem(display, line, "", f"YAML syntax error{column}: {reason}{f'. Hint: {hint}' if hint else ''}")


# PyYAML's wording -> what usually went wrong, in plain words (first match wins).
_HINTS: tuple[tuple[str, str], ...] = (
    ("'\\t'", ""),  # the reason already says it
    ("flow sequence", "a [list] written on one line must end with ] on that line; quote items that hold : , [ or ]"),
    ("flow mapping", "a {mapping} written on one line must end with } on that line; quote values that hold : , { or }"),
    (
        "mapping values are not allowed",
        "a value holds ': ' (quote the whole value) or this line is indented deeper than its key",
    ),
    ("could not find expected ':'", "a line inside a mapping lacks 'key: value', or a quoted value is not closed"),
    ("did not find expected key", "this line is not indented like the keys above it"),
    ("did not find expected '-' indicator", "this line is not indented like the list items above it"),
    ("expected <block end>", "this line is not indented like the lines above it"),
    ("unexpected end of stream", "a quote, [ or { is opened but never closed"),
    (
        "found undefined alias",
        "*name refers to an anchor &name that is not defined; quote the value if * is meant as text",
    ),
    (
        "expected alphabetic or numeric character",
        "* and & start YAML aliases and anchors; quote the value if it is text",
    ),
    ("cannot start any token", "a value cannot start with this character; put the value in quotes"),
    (
        "found unknown escape character",
        "inside \"double quotes\" a backslash starts an escape; use 'single quotes' or write \\\\",
    ),
)


def syntax_hint(reason: str) -> str:
    """A one-line hint for a YAML syntax error, or "" when there is none worth giving."""
    for needle, hint in _HINTS:
        if needle in reason:
            return hint
    return "YAML often notices a mistake a line late: check the line above too"


class _Walker:
    """One pass over the node tree: lines of every path, plus the problems found on the way."""

    def __init__(self, display: str, tagged: dict[int, str]) -> None:
        self.display = display
        self.tagged = tagged
        self.lines: dict[PathKey, int] = {}
        self.problems: list[Problem] = []
        self.count = 0
        self.open: list[yaml.Node] = []
        self.constructor = yaml.constructor.SafeConstructor()

    def _problem(self, node: yaml.Node, path: PathKey, message: str) -> None:
        self.problems.append(Problem(self.display, node.start_mark.line + 1, format_path(path), message))

    def walk(self, node: yaml.Node, path: PathKey, depth: int) -> None:
        line = node.start_mark.line + 1
        self.count += 1
        if self.count > MAX_NODES:
            raise _Stop(
                self.lines.get(path[:1], line),
                path[:1],
                f"YAML expands to more than {MAX_NODES} values; an alias bomb?",
            )
        if node in self.open:
            raise _Stop(line, path, "recursive alias: this value contains itself")
        if depth > MAX_DEPTH:
            raise _Stop(line, path[:1], _TOO_DEEP)
        self.lines.setdefault(path, line)
        if node.tag not in _SAFE_TAGS or id(node) in self.tagged:
            # Any tag, even `!!str`: a blueprint is plain text, numbers, booleans, lists and mappings.
            tag = self.tagged.get(id(node), node.tag).replace(_TAG_PREFIX, "!!")
            self._problem(
                node, path, f"YAML tag {tag!r} is not allowed; write plain values (text, numbers, lists, mappings)"
            )
        elif isinstance(node, yaml.ScalarNode) and node.tag != _TAG_PREFIX + "str":
            try:  # e.g. a timestamp out of range would only fail later, without a line
                self.constructor.construct_object(node)
            except (yaml.YAMLError, ValueError, KeyError, OverflowError):
                self._problem(node, path, f"{node.value!r} is not a valid {node.tag.replace(_TAG_PREFIX, '!!')}")
        elif isinstance(node, yaml.CollectionNode):
            self.open.append(node)  # the collections we are inside of: an alias to one is a loop
            if isinstance(node, yaml.MappingNode):
                self._mapping(node, path, depth)
            else:
                for index, item in enumerate(node.value):
                    self.walk(item, (*path, index), depth + 1)
            self.open.pop()

    def _mapping(self, node: yaml.MappingNode, path: PathKey, depth: int) -> None:
        seen: set[str] = set()
        for key_node, value_node, merged in _pairs(node, path, depth):
            if not isinstance(key_node, yaml.ScalarNode):
                self._problem(key_node, path, "a key must be plain text, not a list or mapping")
                continue
            child = (*path, key_node.value)
            if key_node.tag not in _SAFE_TAGS or id(key_node) in self.tagged:
                self.walk(key_node, child, depth + 1)  # reports the tag
                continue
            if key_node.tag != _TAG_PREFIX + "str":
                tag = key_node.tag.replace(_TAG_PREFIX, "")
                kind = _KEY_KINDS.get(tag, f"a {tag!r} value")
                self._problem(
                    key_node,
                    child,
                    f"key {key_node.value!r} reads as {kind}, but keys must be text; quote it if you meant it",
                )
                continue
            if key_node.value in seen:
                if not merged:  # a merged key (`<<: *anchor`) is meant to be overridden
                    self._problem(key_node, child, "duplicate key")
                continue
            seen.add(key_node.value)
            self.lines[child] = key_node.start_mark.line + 1
            self.walk(value_node, child, depth + 1)


def _pairs(node: yaml.MappingNode, path: PathKey, depth: int) -> Iterator[tuple[yaml.Node, yaml.Node, bool]]:
    """A mapping's own key/value pairs, then those it merges with `<<:` (YAML's precedence)."""
    sources: list[yaml.Node] = []
    for key_node, value_node in node.value:
        if key_node.tag == _MERGE_TAG:
            sources.extend(value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node])
        else:
            yield key_node, value_node, False
    if depth > MAX_DEPTH:
        raise _Stop(node.start_mark.line + 1, path, "recursive merge: `<<:` merges a mapping into itself")
    for source in sources:
        if isinstance(source, yaml.MappingNode):  # anything else: yaml.load reports it
            for key_node, value_node, _ in _pairs(source, path, depth + 1):
                yield key_node, value_node, True
