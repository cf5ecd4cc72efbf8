"""`targets.yaml`: the instances one blueprint repo drives (staging, production, ...).

Each target names its Open WebUI URL, where its admin token is (an environment variable or a
file, exactly one; never the token itself) and the variables its blueprints' `${NAME}`
references resolve to. Pure apart from reading the file; errors name its file, line and field.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr, StringConstraints, ValidationError, model_validator

from .errors import BlueprintError, ConfigError, Problem
from .yaml_source import read_yaml

TARGETS_FILE = "targets.yaml"

TargetName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]*$", max_length=64)]
VariableName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=128)]
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Z_][A-Z0-9_]*$", max_length=128)]
# Numbers are written as text (a port, a version); booleans are refused: `yes` would become "True".
VariableValue = Union[StrictStr, StrictInt, StrictFloat]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class TargetDef(_Strict):
    url: Annotated[str, StringConstraints(pattern=r"^https?://\S+$", max_length=2000)]
    token_env: EnvName | None = None
    token_file: Annotated[str, StringConstraints(min_length=1)] | None = None
    variables: dict[VariableName, VariableValue] = Field(default_factory=dict)
    # A group an agent's access names that the instance lacks: fail, skip the grant, or create it (groups.py).
    missing_groups: Literal["fail", "skip", "create"] = "fail"

    @model_validator(mode="after")
    def _one_token_source(self) -> "TargetDef":
        if (self.token_env is None) == (self.token_file is None):
            raise ValueError("set exactly one of token_env (an environment variable) or token_file (a file) for the admin token")
        return self


class TargetsFile(_Strict):
    targets: dict[TargetName, TargetDef] = Field(min_length=1)


@dataclass(frozen=True)
class Target:
    """One selected target, ready to connect with."""

    name: str
    url: str
    token_env: str | None
    token_file: Path | None  # relative paths are taken from the targets file's directory
    variables: Mapping[str, str] = field(default_factory=dict)
    file: str = TARGETS_FILE
    missing_groups: str = "fail"  # fail | skip | create (groups.py)


def load_targets(path: Path) -> dict[str, Target]:
    """Every target in `path`; BlueprintError naming file, line and field for each problem."""
    from .loader import pydantic_problems  # the loader's wording for schema errors

    display = str(path)
    source, problems = read_yaml(path, display)
    if source is None or problems:
        raise BlueprintError(problems)
    if not isinstance(source.data, dict):
        raise BlueprintError([source.problem((), "expected a mapping with a `targets:` key at the top level")])
    try:
        parsed = TargetsFile.model_validate(source.data)
    except ValidationError as exc:
        raise BlueprintError(pydantic_problems(exc, source)) from None
    base = path.parent
    return {
        name: Target(
            name=name,
            url=t.url,
            token_env=t.token_env,
            token_file=(base / t.token_file) if t.token_file else None,
            variables={k: str(v) for k, v in t.variables.items()},
            file=display,
            missing_groups=t.missing_groups,
        )
        for name, t in parsed.targets.items()
    }


def select_target(name: str, path: Path) -> Target:
    """The target called `name` in `path`; a clear error when the file or the name is missing."""
    if not path.is_file():
        raise ConfigError(
            f"--target {name}: no targets file {path} (create it at the repo root, or pass --targets-file FILE)"
        )
    targets = load_targets(path)
    if name not in targets:
        close = difflib.get_close_matches(name, list(targets), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"no target {name!r} in {path}{hint}; targets there: {', '.join(sorted(targets))}")
    return targets[name]


def targets_problems(path: Path) -> list[Problem]:
    """The problems in a targets file, or none (for `validate`, which reports them with the rest)."""
    try:
        load_targets(path)
    except BlueprintError as exc:
        return list(exc.problems)
    return []
