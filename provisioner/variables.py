"""`${NAME}` and `${NAME:-default}` in blueprint string values, expanded before validation.

One set of blueprints drives several instances (targets); what differs between them, such as
a backend's base URL, is a variable. NAME resolves from the selected target's `variables`, then
the process environment, then the default; `$${` writes a literal `${`. Pure: the caller hands
in the values and the environment.

Secrets never go through variables: they would be written into model rows and shown in every
diff. A reference inside an `api_key_env` field (that field names the environment variable
holding a key, so the key itself stays out of the YAML) and a reference to the admin token's
variable are refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .blueprints import TOKEN_VARIABLES
from .errors import Problem
from .yaml_source import PathKey, SourceFile

# `$${` (an escaped `${`), or `${...}` up to the first `}`, or an unclosed `${`.
_REFERENCE = re.compile(r"\$\$\{|\$\{([^}]*)\}|\$\{")
_EXPRESSION = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>.*))?", re.DOTALL)
SYNTAX_HINT = "write ${NAME} or ${NAME:-default} (NAME: letters, digits and _), or $${ for a literal ${"
# Fields whose value names a secret: a variable there would route a key through the YAML.
KEY_FIELDS = frozenset({"api_key_env"})
ALWAYS_SECRET = TOKEN_VARIABLES  # the admin token's variables are secret in any target
PLACEHOLDER = "https://unresolved.invalid/{name}"


@dataclass(frozen=True)
class Variables:
    """Where `${NAME}` finds its value, and what to do when it finds none.

    `strict`: an unresolved variable is a problem (diff, sync, `validate --target`). Otherwise
    (`validate` alone, offline) it becomes a placeholder and only the syntax is checked.
    """

    values: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    strict: bool = False
    target: str | None = None  # named in messages
    targets_file: str = "targets.yaml"
    secret_names: frozenset[str] = ALWAYS_SECRET

    def lookup(self, name: str) -> str | None:
        if name in self.values:
            return self.values[name]
        return self.env.get(name)


@dataclass
class Expanded:
    """A file's data with every reference replaced, and what the expansion found."""

    data: Any
    problems: list[Problem] = field(default_factory=list)
    unresolved: dict[PathKey, str] = field(default_factory=dict)  # where -> first unresolved name
    used: list[tuple[str, PathKey]] = field(default_factory=list)  # (variable, where)


def expand(source: SourceFile, variables: Variables) -> Expanded:
    """Replace the references in every string value of `source` (keys are left as written)."""
    result = Expanded(data=None)
    result.data = _walk(source.data, (), source, variables, result)
    return result


def _walk(value: Any, path: PathKey, source: SourceFile, variables: Variables, result: Expanded) -> Any:
    if isinstance(value, dict):
        return {k: _walk(v, (*path, k), source, variables, result) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, (*path, i), source, variables, result) for i, v in enumerate(value)]
    if isinstance(value, str) and "${" in value:
        return _expand_string(value, path, source, variables, result)
    return value


def _expand_string(text: str, path: PathKey, source: SourceFile, variables: Variables, result: Expanded) -> str:
    in_key_field = bool(path) and path[-1] in KEY_FIELDS

    def replace(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole == "$${":
            return "${"
        inner = match.group(1)
        if inner is None:
            result.problems.append(source.problem(path, f"unclosed '${{': {SYNTAX_HINT}"))
            return whole
        parsed = _EXPRESSION.fullmatch(inner)
        if parsed is None or "${" in (parsed.group("default") or ""):  # nesting is not supported
            result.problems.append(source.problem(path, f"bad variable reference {whole!r}: {SYNTAX_HINT}"))
            return whole
        name, default = parsed.group("name"), parsed.group("default")
        if in_key_field:
            result.problems.append(
                source.problem(
                    path,
                    f"no variables in {path[-1]}: it names the environment variable that holds the key "
                    "(write the name itself, e.g. RESEARCH_KEY); secrets never go through variables",
                )
            )
            return whole
        if name in variables.secret_names:
            result.problems.append(
                source.problem(
                    path,
                    f"${{{name}}} holds a secret; secrets never go into blueprint values "
                    "(they would be written to Open WebUI and shown in every diff)",
                )
            )
            return whole
        result.used.append((name, path))
        value = variables.lookup(name)
        if value is None:
            value = default
        if value is not None:
            return value
        if variables.strict:
            result.problems.append(source.problem(path, _unresolved_message(name, variables)))
            return whole
        result.unresolved.setdefault(path, name)
        return PLACEHOLDER.format(name=name)

    return _REFERENCE.sub(replace, text)


def _unresolved_message(name: str, variables: Variables) -> str:
    if variables.target:
        where = f"target {variables.target!r} in {variables.targets_file} has no variable {name} and the environment has none"
        fix = f"add it under targets.{variables.target}.variables"
    else:
        where = f"no target is selected (--target) and the environment has no {name}"
        fix = "select a target with --target, set it in the environment"
    return f"variable {name} is not set: {where}; {fix}, or write ${{{name}:-default}}"
