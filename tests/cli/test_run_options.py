"""diff and sync hand their options to one pipeline as one RunOptions, field by field by name."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from provisioner.cli import PlanOutput, RunOptions


def options(**changes: object) -> RunOptions:
    fields = dict(
        path=Path("blueprints"),
        functions=Path("functions"),
        output=PlanOutput.text,
        detailed_exitcode=False,
        prune=False,
        adopt=None,
        no_color=False,
        dry_run=True,
        yes=False,
    )
    return RunOptions(**{**fields, **changes})  # type: ignore[arg-type]  # the test's loose dict of fields


def test_run_options_take_no_positional_field() -> None:
    """Four booleans in a row (detailed_exitcode, prune, no_color, dry_run, yes): a swap passed by
    position would pass silently, so the fields are keyword-only."""
    with pytest.raises(TypeError):
        RunOptions(Path("b"), Path("f"), PlanOutput.text, False, True, None, False, True, True)  # type: ignore[call-arg]  # what it refuses
    assert options(prune=True).prune and not options().prune


def test_run_options_cannot_change_once_made() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        options().dry_run = False  # type: ignore[misc]  # what it refuses
