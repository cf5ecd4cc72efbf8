"""The one exception tree of the provisioner.

    ProvisionError                 anything the CLI reports as "error", exit 1
     ├── BlueprintError            bad input: every Problem found (file, line, field, message)
     │    └── TargetsError         ... found in the targets file (reported with the blueprints')
     ├── ConfigError               bad connection settings (URL, token, token file)
     ├── ApiError                  Open WebUI answered with an error status (method, path, status)
     ├── UnreachableError          no answer from Open WebUI (connect error, timeout) after retries
     ├── OwnershipError            a desired object exists but carries no ownership marker
     ├── PruneRefusedError         --prune with an empty desired set
     └── ApplyError                a sync stopped part-way; carries the ApplyReport

Errors from httpx, yaml and pydantic are translated where they enter (client.py, loader.py);
nothing else catches broadly.

Layer: vocabulary.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol


class ProvisionError(Exception):
    """Base class: a user-facing failure with a message fit to print as it is."""


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with the input, located as precisely as the source allows."""

    file: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        field = f" {self.field}:" if self.field else ""
        return f"{where}:{field} {self.message}"


class BlueprintError(ProvisionError):
    """The blueprints or function files are invalid; holds every problem, not just the first."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(sorted(set(problems), key=_problem_key))
        count = len(self.problems)
        head = f"{count} problem{'s' if count != 1 else ''} in the blueprints"
        super().__init__("\n".join([head + ":", *(f"  {p}" for p in self.problems)]))


class TargetsError(BlueprintError):
    """The targets file is invalid. A BlueprintError, so `validate` and `sync` report its problems
    together with the blueprints' (a target names the variables the blueprints may use)."""


def _problem_key(p: Problem) -> tuple[str, int, str, str]:
    return (p.file, p.line or 0, p.field, p.message)


class ConfigError(ProvisionError):
    """The connection settings are missing or unsafe (URL, token, token file)."""


class ApiError(ProvisionError):
    """Open WebUI answered a request with an error status."""

    def __init__(self, method: str, path: str, status: int, detail: str, hint: str = "") -> None:
        self.method, self.path, self.status, self.detail = method, path, status, detail
        message = f"Open WebUI answered {status} to {method} {path}: {detail}"
        super().__init__(f"{message} ({hint})" if hint else message)


class UnreachableError(ProvisionError):
    """Open WebUI could not be reached (refused, DNS, timeout), even after retries."""


class OwnershipError(ProvisionError):
    """Objects with the blueprints' ids exist but were not created by provision."""

    def __init__(self, conflicts: Iterable[tuple[str, str]]) -> None:
        self.conflicts = tuple(sorted(conflicts))
        lines = [f"  {kind} {ident}" for kind, ident in self.conflicts]
        super().__init__(
            "These objects exist in Open WebUI but are not managed by provision "
            "(no ownership marker), so they are left alone:\n"
            + "\n".join(lines)
            + "\nRename them in the blueprints, or take them over with --adopt KIND/ID."
        )


class PruneRefusedError(ProvisionError):
    """--prune was asked for while the blueprints define nothing: that would delete everything."""


class Report(Protocol):
    """What ApplyError needs of apply.ApplyReport; named here so this module imports nothing."""

    stopped_by: str

    def failure_message(self) -> str: ...

    def to_json(self) -> dict[str, Any]: ...


class ApplyError(ProvisionError):
    """A sync failed part-way; the report (an apply.ApplyReport) says what was applied and what was not."""

    def __init__(self, report: Report) -> None:
        self.report = report
        super().__init__(report.failure_message())
