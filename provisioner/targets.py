"""`targets.yaml`: the instances one blueprint repo drives (staging, production, ...).

Each target names its Open WebUI URL, where its admin token is (an environment variable or a
file, exactly one; never the token itself) and the variables its blueprints' `${NAME}`
references resolve to. `env_allow` (at the top, for every target, and in a target, for that
one) lists the only environment variables `${NAME}` may read: the environment also holds CI
secrets, so nothing is read from it unless named here. Pure apart from reading the file;
errors name its file, line and field.

Layer: source.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    StringConstraints,
    ValidationError,
    model_validator,
)

from .blueprints import SERVER_SECRET_VARIABLES, TOKEN_VARIABLES
from .errors import BlueprintError, ConfigError, Problem, TargetsError
from .schema_problems import pydantic_problems  # the loader's wording for schema errors
from .yaml_source import SourceFile, read_yaml

TARGETS_FILE = "targets.yaml"

TargetName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]*$", max_length=64)]
VariableName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=128)]
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Z_][A-Z0-9_]*$", max_length=128)]
# Numbers are written as text (a port, a version); booleans are refused: `yes` would become "True".
VariableValue = StrictStr | StrictInt | StrictFloat


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)


class TargetDef(_Strict):
    url: Annotated[str, StringConstraints(pattern=r"^https?://\S+$", max_length=2000)]
    token_env: EnvName | None = None
    token_file: Annotated[str, StringConstraints(min_length=1)] | None = None
    variables: dict[VariableName, VariableValue] = Field(default_factory=dict)
    # A group an agent's access names that the instance lacks: fail, skip the grant, or create it (groups.py).
    missing_groups: Literal["fail", "skip", "create"] = "fail"
    env_allow: list[EnvName] = Field(default_factory=list)
    # Hosts this target may reach over plain http without --insecure: cluster-internal names
    # such as `*.svc.cluster.local` (fnmatch patterns; the token then crosses only that network).
    allow_http: list[Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9*.-]+$", max_length=253)]] = Field(
        default_factory=list
    )
    # Each Open WebUI replica's own URL behind the load balancer: `provision doctor` probes the
    # agents' backends through every one (a backend one replica cannot reach shows as such).
    replicas: list[Annotated[str, StringConstraints(pattern=r"^https?://\S+$", max_length=2000)]] = Field(
        default_factory=list
    )

    @model_validator(mode="after")
    def _one_token_source(self) -> TargetDef:
        if (self.token_env is None) == (self.token_file is None):
            raise ValueError(
                "set exactly one of token_env (an environment variable) or token_file (a file) for the admin token"
            )
        return self


class TargetsFile(_Strict):
    env_allow: list[EnvName] = Field(default_factory=list)
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
    env_allow: frozenset[str] = frozenset()  # the file's and this target's own
    allow_http: tuple[str, ...] = ()  # host patterns reached over plain http without --insecure
    replicas: tuple[str, ...] = ()  # each replica's own URL, for `provision doctor`


@dataclass(frozen=True)
class TargetsConfig:
    """A whole targets file: every target, and what the file allows from the environment."""

    targets: Mapping[str, Target]
    env_allow: frozenset[str]  # the top-level list (every target's Target.env_allow includes it)
    file: str = TARGETS_FILE

    @property
    def token_variables(self) -> frozenset[str]:
        """Every target's token variable: each holds an admin token, whichever target is in use."""
        return frozenset(t.token_env for t in self.targets.values() if t.token_env)


def load_targets(path: Path) -> dict[str, Target]:
    """Every target in `path`; TargetsError naming file, line and field for each problem."""
    return dict(load_targets_config(path).targets)


def load_targets_config(path: Path) -> TargetsConfig:
    """The targets file at `path`; TargetsError naming file, line and field for each problem."""

    display = str(path)
    source, problems = read_yaml(path, display)
    if source is None or problems:
        raise TargetsError(problems)
    if not isinstance(source.data, dict):
        raise TargetsError([source.problem((), "expected a mapping with a `targets:` key at the top level")])
    try:
        parsed = TargetsFile.model_validate(source.data)
    except ValidationError as exc:
        raise TargetsError(pydantic_problems(exc, source)) from None
    _check_env_allow(parsed, source)
    base = path.parent
    shared = frozenset(parsed.env_allow)
    targets = {
        name: Target(
            name=name,
            url=t.url,
            token_env=t.token_env,
            token_file=(base / t.token_file) if t.token_file else None,
            variables={k: str(v) for k, v in t.variables.items()},
            file=display,
            missing_groups=t.missing_groups,
            env_allow=shared | frozenset(t.env_allow),
            allow_http=tuple(t.allow_http),
            replicas=tuple(t.replicas),
        )
        for name, t in parsed.targets.items()
    }
    return TargetsConfig(targets, shared, display)


def _check_env_allow(parsed: TargetsFile, source: SourceFile) -> None:
    """env_allow may not name a variable that holds a token or a server secret."""
    tokens = {t.token_env for t in parsed.targets.values() if t.token_env}
    secret = tokens | TOKEN_VARIABLES | SERVER_SECRET_VARIABLES
    lists: list[tuple[tuple[str, ...], list[str]]] = [(("env_allow",), parsed.env_allow)]
    lists += [(("targets", name, "env_allow"), t.env_allow) for name, t in parsed.targets.items()]
    problems = [
        source.problem(
            (*where, index),
            f"{name} holds "
            + (
                "an Open WebUI admin token (a target's token_env)"
                if name in tokens | TOKEN_VARIABLES
                else "a server secret"
            )
            + "; secrets never go through variables, so it cannot be allowed",
        )
        for where, names in lists
        for index, name in enumerate(names)
        if name in secret
    ]
    if problems:
        raise TargetsError(problems)


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
