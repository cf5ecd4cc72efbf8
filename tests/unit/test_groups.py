"""Groups the blueprints name that the instance lacks (groups.py, targets' missing_groups)."""

from __future__ import annotations

import pytest

from provisioner.errors import BlueprintError
from provisioner.groups import group_form, is_own_group, member_count, stale_own_groups
from provisioner.targets import load_targets

OWN = {"aihub": {"managed_by": "aihub-provision"}}


def test_created_groups_carry_the_marker_and_are_recognised() -> None:
    form = group_form("Legal")
    assert form["name"] == "Legal" and is_own_group(form)
    assert not is_own_group({"name": "Legal", "data": {"aihub": {"managed_by": "someone-else"}}})
    assert not is_own_group({"name": "Legal", "data": None})


def test_prune_deletes_only_own_empty_unnamed_groups() -> None:
    live = [
        {"id": "1", "name": "Empty", "data": OWN, "member_count": 0},
        {"id": "2", "name": "Busy", "data": OWN, "member_count": 3},
        {"id": "3", "name": "Unknown", "data": OWN},  # a release that does not count: keep
        {"id": "4", "name": "Old", "data": OWN, "user_ids": []},
        {"id": "5", "name": "Theirs", "member_count": 0},
        {"id": "6", "name": "Named", "data": OWN, "member_count": 0},
    ]
    empty, kept = stale_own_groups(live, ["Named"])
    assert [g["id"] for g in empty] == ["1", "4"]
    assert [g["id"] for g in kept] == ["2", "3"]
    assert member_count({"user_ids": ["a", "b"]}) == 2 and member_count({}) is None


def test_targets_file_takes_missing_groups_and_names_a_bad_value(tmp_path) -> None:
    path = tmp_path / "targets.yaml"
    path.write_text("targets:\n  prod:\n    url: https://x\n    token_env: T\n    missing_groups: create\n")
    assert load_targets(path)["prod"].missing_groups == "create"
    path.write_text("targets:\n  prod:\n    url: https://x\n    token_env: T\n")
    assert load_targets(path)["prod"].missing_groups == "fail"
    path.write_text("targets:\n  prod:\n    url: https://x\n    token_env: T\n    missing_groups: ignore\n")
    with pytest.raises(BlueprintError) as exc:
        load_targets(path)
    [problem] = exc.value.problems
    assert problem.line == 5 and "missing_groups" in problem.field
