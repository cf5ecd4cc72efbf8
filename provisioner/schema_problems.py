"""pydantic's validation errors in a YAML reader's words: one Problem per error, at the YAML's
own path and line. Shared by the blueprint loader and the targets file (targets.py).

Layer: source.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from .blueprints import Agent, Blueprint, Capability, CapabilityCatalog, FeatureCatalog, FeatureDef, Suggestion
from .errors import Problem
from .yaml_source import PathKey, SourceFile

# Every field name a blueprint, catalog or targets file may hold, for "did you mean" hints.
_ALL_FIELDS = (
    {
        name
        for model in (Blueprint, Agent, CapabilityCatalog, Capability, FeatureCatalog, FeatureDef, Suggestion)
        for name in model.model_fields
    }
    | {"groups", "transport", "url", "model", "api_key_env", "api_key_from", "insecure", "calls"}
    | {"identity", "oauth_token_header"}
    | {"targets", "token_env", "token_file", "variables"}
)


def pydantic_problems(exc: ValidationError, source: SourceFile) -> list[Problem]:
    """One Problem per pydantic error, with the loc mapped onto the YAML's own path and line."""
    errors = [e for e in exc.errors() if not _wrong_union_branch(tuple(e["loc"]), source.data)]
    problems: list[Problem] = []
    for error in errors or exc.errors():
        loc = _clean_loc(tuple(error["loc"]), source.data, error["type"])
        problems.append(source.problem(loc, _message(error, loc)))
    return problems


def _wrong_union_branch(loc: PathKey, data: Any) -> bool:
    """True for an error from a union branch that does not match the kind of value written.

    For `access: {groups: x}` pydantic reports both "not 'public' or 'private'" (the literal
    branch) and the real problem inside the mapping; only the second helps the reader.
    """
    current = data
    for part in loc:
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            current = current[part]
        elif isinstance(part, str) and part.startswith("literal["):
            return isinstance(current, (dict, list))
        elif isinstance(part, str) and part[:1].isupper():  # a model branch, e.g. GroupAccess
            return not isinstance(current, dict)
        else:
            return False
    return False


def _message(error: ErrorDetails, loc: PathKey) -> str:
    kind = error["type"]
    if kind == "missing":
        return "required field is missing"
    if kind == "bool_type":
        return f"expected true or false (a YAML boolean, unquoted), found {describe_value(error.get('input'))}"
    if kind == "extra_forbidden":
        name = str(loc[-1]) if loc else ""
        return f"unknown field{suggest(name, _ALL_FIELDS)}"
    if kind == "string_pattern_mismatch":
        pattern = error.get("ctx", {}).get("pattern", "")
        hints = {
            r"^[a-z][a-z0-9_-]*$": "use lowercase letters, digits, '-' and '_', starting with a letter (no dots or spaces)",
            r"^[a-z][a-z0-9_]*$": "use lowercase letters, digits and '_', starting with a letter",
            r"^[a-z][a-z0-9_.-]*$": "use lowercase letters, digits, '_', '-' and '.', starting with a letter",
            r"^https?://\S+$": "expected an http:// or https:// URL",
            r"^[A-Z_][A-Z0-9_]*$": "expected an environment variable name like MY_AGENT_KEY",
            r"^[a-z_][a-z0-9_]*$": "expected a function id: the file name of one of your functions without .py",
            r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$": "expected an HTTP header name like X-User-Access-Token (no spaces or ':')",
        }
        return f"invalid value {error.get('input')!r}: " + hints.get(pattern, f"must match {pattern}")
    if kind in ("too_short", "string_too_short") and not str(error.get("input") or "").strip():
        return "must not be empty"
    if kind in ("too_long", "string_too_long"):
        limit = error.get("ctx", {}).get("max_length")
        unit = "characters" if kind == "string_too_long" else "items"
        return f"too long: {len(error.get('input') or '')} {unit}, the limit is {limit}"
    message = str(error["msg"])
    if kind in _EXPECTED and not isinstance(error.get("input"), _EXPECTED[kind]):
        return f"{message}, found {describe_value(error.get('input'))}"
    return message[len("Value error, ") :] if message.startswith("Value error, ") else message


# pydantic error type -> the Python types that are the kind of value the field wants
_EXPECTED: dict[str, type | tuple[type, ...]] = {
    "string_type": str,
    "list_type": list,
    "dict_type": dict,
    "model_type": dict,
    "model_attributes_type": dict,
}


def describe_value(value: Any) -> str:
    """A YAML reader's name for a value: what they wrote, not Python's type."""
    if value is None:
        return "nothing (the value is empty)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()} (quote it if you meant text)"
    if isinstance(value, (int, float)):
        return f"the number {value} (quote it if you meant text)"
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"the {type(value).__name__} {value} (quote it if you meant text)"  # a date, bytes, a set


def _clean_loc(loc: PathKey, data: Any, kind: str) -> PathKey:
    """Drop pydantic's union-branch tags so the loc is a path through the YAML itself."""
    out: list[str | int] = []
    current = data
    for index, part in enumerate(loc):
        last = index == len(loc) - 1
        if isinstance(current, dict) and part in current:
            current = current[part]
            out.append(part)
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            current = current[part]
            out.append(part)
        elif last and kind in ("missing", "extra_forbidden") and isinstance(current, dict):
            out.append(part)
        elif isinstance(current, dict) and isinstance(part, str) and part in ("[key]",):
            continue
    return tuple(out)


def suggest(name: str, options: Iterable[str]) -> str:
    """A ` (did you mean 'x'?)` hint: the option closest to `name`, if one is close (of a mapping, its keys)."""
    close = difflib.get_close_matches(name, list(options), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""
