"""The user's own functions attached to agents (`filters:` / `actions:`): which ids, and checks. Pure.

A blueprint lists functions for all its agents; an agent may add more. They must be the user's
own (the bundle's are attached by provision itself), of the right type, and not global: Open
WebUI runs a global filter (and shows a global action) on every model already, so attaching one
would say something the instance does not do.

Layer: source.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from .blueprints import Agent, Blueprint
from .contract import BUNDLE_PREFIX
from .errors import Problem
from .function_files import FunctionFile
from .loader import Catalog, LoadedBlueprint
from .schema_problems import suggest
from .yaml_source import PathKey

FIELDS = ("filters", "actions")
_KIND_OF_FIELD = {"filters": "filter", "actions": "action"}
_CLASS_OF_KIND = {"pipe": "Pipe", "filter": "Filter", "action": "Action", "event": "Event"}


def attached(blueprint: Blueprint, agent: Agent, field: str) -> list[str]:
    """The ids in `field` for this agent: the blueprint's, then the agent's own, in order."""
    ids: list[str] = list(getattr(blueprint, field))
    ids += [i for i in getattr(agent, field) if i not in ids]
    return ids


def check_attachments(
    catalog: Catalog,
    own: Sequence[FunctionFile],
    *,
    reserved: Collection[str],
    functions_dir: Path | None,
) -> list[Problem]:
    """Every problem with the `filters`/`actions` of every blueprint and agent.

    `own` are the user's functions (from `functions_dir`), `reserved` the bundle's ids.
    """
    by_id = {f.id: f for f in own}
    problems: list[Problem] = []
    for lb in catalog.blueprints:
        bp = lb.blueprint
        for field in FIELDS:
            first: dict[str, int] = {}
            for i, ident in enumerate(getattr(bp, field)):
                path: PathKey = (field, i)
                if ident in first:
                    problems.append(_duplicate(lb, path, ident, lb.source.line(field, first[ident])))
                    continue
                first[ident] = i
                problems += _check_one(lb, path, ident, field, by_id, reserved, functions_dir)
            for a, agent in enumerate(bp.agents):
                mine: dict[str, int] = {}
                for i, ident in enumerate(getattr(agent, field)):
                    path = ("agents", a, field, i)
                    if ident in first:
                        problems.append(
                            _duplicate(
                                lb,
                                path,
                                ident,
                                lb.source.line(field, first[ident]),
                                "the blueprint attaches it to every agent",
                            )
                        )
                        continue
                    if ident in mine:
                        problems.append(_duplicate(lb, path, ident, lb.source.line("agents", a, field, mine[ident])))
                        continue
                    mine[ident] = i
                    problems += _check_one(lb, path, ident, field, by_id, reserved, functions_dir)
    return problems


def _duplicate(lb: LoadedBlueprint, path: PathKey, ident: str, line: int | None, why: str = "") -> Problem:
    where = f" (first at line {line}{'; ' + why if why else ''})" if line else ""
    return lb.source.problem(path, f"{ident!r} is listed twice{where}; list it once")


def _check_one(
    lb: LoadedBlueprint,
    path: PathKey,
    ident: str,
    field: str,
    by_id: Mapping[str, FunctionFile],
    reserved: Collection[str],
    functions_dir: Path | None,
) -> list[Problem]:
    want = _KIND_OF_FIELD[field]
    folder = f"{functions_dir}/" if functions_dir is not None else "your functions folder"
    if ident in reserved or ident.startswith(BUNDLE_PREFIX):
        return [
            lb.source.problem(
                path,
                f"{ident!r} belongs to provision's own bundle, which attaches it where it is needed; "
                f"list only your own functions (files in {folder})",
            )
        ]
    function = by_id.get(ident)
    if function is None:
        if functions_dir is None or not functions_dir.is_dir():
            return [
                lb.source.problem(
                    path, f"no function {ident!r}: the folder {folder} does not exist (--functions DIR names it)"
                )
            ]
        same_kind = sorted(f.id for f in by_id.values() if f.kind == want)
        have = ", ".join(same_kind) or "none"
        return [
            lb.source.problem(
                path,
                f"no function {ident!r} in {folder}{suggest(ident, set(by_id))}; its {want}s are: {have}",
            )
        ]
    if function.kind != want:
        return [
            lb.source.problem(
                path,
                f"{ident!r} is {_article(function.kind)} {function.kind} (its file defines "
                f"`class {_CLASS_OF_KIND[function.kind]}`), but `{field}` takes {want}s "
                f"(`class {_CLASS_OF_KIND[want]}`)",
            )
        ]
    if function.is_global:
        runs = "runs on" if want == "filter" else "shows on"
        return [
            lb.source.problem(
                path,
                f"{ident!r} is global (`global: true` in {function.path}): Open WebUI already {runs} "
                "every model with it; remove it here or set `global: false`",
            )
        ]
    return []


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"
