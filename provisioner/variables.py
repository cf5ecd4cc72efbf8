"""`${NAME}` and `${NAME:-default}` in blueprint string values, expanded before validation.

One set of blueprints drives several instances (targets); what differs between them, such as
a backend's base URL, is a variable. NAME resolves from the selected target's `variables`,
then from the environment but only for the names the targets file allows (`env_allow`), then
the default; `$${` writes a literal `${`. `${NAME:-default}` takes the default when NAME is
unset or set to the empty string (as in a POSIX shell). Pure: the caller hands in the values
and the environment.

Secrets never go through variables: they would be written into model rows and shown in every
diff. A reference inside an `api_key_env` field (that field names the environment variable
holding a key, so the key itself stays out of the YAML), a reference to any target's token
variable, and an expanded value that contains a secret's value (`Variables.secrets`: the admin
tokens; the loader adds the backends' keys) are refused. An expanded value longer than
MAX_VALUE_CHARS, or a file whose expanded values together pass MAX_FILE_CHARS, is refused as
soon as the cap is reached, before anything larger is built.

Layer: source.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .blueprints import TOKEN_VARIABLES
from .errors import Problem
from .targets import TARGETS_FILE, Target, TargetsConfig
from .yaml_source import PathKey, SourceFile

# `$${` (an escaped `${`), or `${...}` up to the first `}`, or an unclosed `${`.
_REFERENCE = re.compile(r"\$\$\{|\$\{([^}]*)\}|\$\{")
_EXPRESSION = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>.*))?", re.DOTALL)
SYNTAX_HINT = "write ${NAME} or ${NAME:-default} (NAME: letters, digits and _), or $${ for a literal ${"
# Fields whose value names a secret: a variable there would route a key through the YAML.
KEY_FIELDS = frozenset({"api_key_env"})
ALWAYS_SECRET = TOKEN_VARIABLES  # the admin token's variables are secret in any target
PLACEHOLDER = "https://unresolved.invalid/{name}"
# The longest field a blueprint has is a few thousand characters; these stop `${D}` repeated
# thousands of times (or a huge D) from building gigabytes before any length check runs.
MAX_VALUE_CHARS = 65_536
MAX_FILE_CHARS = 1_000_000


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
    targets_file: str = TARGETS_FILE
    secret_names: frozenset[str] = ALWAYS_SECRET  # variables that hold a secret: never expanded
    env_allow: frozenset[str] = frozenset()  # the only environment names `${NAME}` may read
    # What no expanded value may contain: what the secret is (named in errors) -> its value.
    secrets: Mapping[str, str] = field(default_factory=dict)

    def lookup(self, name: str) -> str | None:
        if name in self.values:
            return self.values[name]
        return self.env.get(name) if name in self.env_allow else None


TOKEN_IN_USE = "the Open WebUI admin token in use"


def variables_for(
    config: TargetsConfig | None, target: Target | None, env: Mapping[str, str], *, strict: bool
) -> Variables:
    """The Variables of a run: `target`'s values, the environment names the targets file allows
    (none without one), and every target's token variable refused, by name and by value."""
    token_names = set(ALWAYS_SECRET) | set(config.token_variables if config else ())
    if target is not None and target.token_env:
        token_names.add(target.token_env)
    secrets = {
        f"the value of {name} (an Open WebUI admin token)": env[name].strip()
        for name in sorted(token_names - {"OPENWEBUI_TOKEN_FILE"})  # that one holds a path
        if env.get(name, "").strip()
    }
    allowed = target.env_allow if target is not None else (config.env_allow if config else frozenset())
    return Variables(
        values=target.variables if target else {},
        env=dict(env),
        strict=strict,
        target=target.name if target else None,
        targets_file=target.file if target else (config.file if config else TARGETS_FILE),
        secret_names=frozenset(token_names),
        env_allow=frozenset(allowed) - token_names,
        secrets=secrets,
    )


@dataclass
class Expanded:
    """A file's data with every reference replaced, and what the expansion found."""

    data: Any
    problems: list[Problem] = field(default_factory=list)
    unresolved: dict[PathKey, str] = field(default_factory=dict)  # where -> first unresolved name
    used: list[tuple[str, PathKey]] = field(default_factory=list)  # (variable, where)
    # Every string that held a reference, as expanded: (where, value, the variables it used).
    strings: list[tuple[PathKey, str, tuple[str, ...]]] = field(default_factory=list)
    size: int = 0  # characters of expanded strings so far (MAX_FILE_CHARS)


class _CapReached(Exception):
    """An expanded value or the file passed its cap: the expansion stops at once."""


def expand(source: SourceFile, variables: Variables) -> Expanded:
    """Replace the references in every string value of `source` (keys are left as written)."""
    result = Expanded(data=None)
    try:
        result.data = _walk(source.data, (), source, variables, result)
    except _CapReached:
        result.data = None
        return result
    result.problems.extend(secret_problems(result.strings, variables.secrets, source))
    return result


def secret_problems(
    strings: list[tuple[PathKey, str, tuple[str, ...]]], secrets: Mapping[str, str], source: SourceFile
) -> list[Problem]:
    """A problem for each expanded value that contains a secret's value (never the value itself)."""
    found: list[Problem] = []
    for where, value, names in strings:
        for label, secret in secrets.items():
            if secret and secret in value:
                via = ", ".join(f"${{{n}}}" for n in dict.fromkeys(names))
                found.append(
                    source.problem(
                        where,
                        f"once expanded ({via}) the value contains {label}; secrets never go into blueprint "
                        "values (they would be written to Open WebUI and shown in every diff)",
                    )
                )
                break
    return found


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
    names: list[str] = []

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
        names.append(name)
        value = variables.lookup(name)
        if not value and default is not None:  # unset or empty: the default (as in a shell)
            value = default
        if value is not None:
            return value
        if variables.strict:
            result.problems.append(source.problem(path, _unresolved_message(name, variables)))
            return whole
        result.unresolved.setdefault(path, name)
        return PLACEHOLDER.format(name=name)

    pieces: list[str] = []
    size = 0
    position = 0
    for match in _REFERENCE.finditer(text):
        for piece in (text[position : match.start()], replace(match)):
            size += len(piece)
            if size > MAX_VALUE_CHARS:
                result.problems.append(
                    source.problem(path, f"longer than {MAX_VALUE_CHARS} characters once its variables are expanded")
                )
                raise _CapReached
            if result.size + size > MAX_FILE_CHARS:
                result.problems.append(
                    source.problem(
                        path,
                        f"the file's values pass {MAX_FILE_CHARS} characters once their variables are "
                        "expanded (a variable repeated too often, or too long); expansion stopped here",
                    )
                )
                raise _CapReached
            pieces.append(piece)
        position = match.end()
    pieces.append(text[position:])
    expanded = "".join(pieces)
    result.size += len(expanded)
    if names:
        result.strings.append((path, expanded, tuple(names)))
    return expanded


def _unresolved_message(name: str, variables: Variables) -> str:
    if name in variables.env and name not in variables.env_allow:
        where = f"the environment has {name}, but {variables.targets_file} does not allow it (env_allow)"
        fix = f"add {name} to env_allow in {variables.targets_file} if it holds no secret"
    elif variables.target:
        where = f"target {variables.target!r} in {variables.targets_file} has no variable {name} and the environment has none"
        fix = f"add it under targets.{variables.target}.variables"
    else:
        where = f"no target is selected (--target) and no allowed environment variable {name} is set"
        fix = f"select a target with --target, set it and list it in env_allow in {variables.targets_file}"
    return f"variable {name} is not set: {where}; {fix}, or write ${{{name}:-default}}"
