"""Groups the blueprints name that the instance lacks (groups.py, targets' missing_groups)."""

from __future__ import annotations

from typing import Any

import pytest

from provisioner.errors import BlueprintError
from provisioner.groups import (
    group_file_upload,
    group_form,
    group_has_members,
    groups_below_that_may_upload,
    is_own_group,
    member_count,
    members_may_upload,
    stale_own_groups,
)
from provisioner.targets import load_targets

OWN = {"aihub": {"managed_by": "aihub-provision"}}


def test_created_groups_carry_the_marker_and_are_recognised() -> None:
    form = group_form("Legal")
    assert form["name"] == "Legal" and is_own_group(form)
    assert not is_own_group({"name": "Legal", "data": {"aihub": {"managed_by": "someone-else"}}})
    assert not is_own_group({"name": "Legal", "data": None})


def test_prune_deletes_only_own_empty_unnamed_groups() -> None:
    live: list[dict[str, Any]] = [
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


def test_where_groups_nest_a_parent_reaches_the_members_below_it_and_gives_them_its_permissions() -> None:
    """0.12: a member of a group is a member of every group above it, and gets their permissions;
    the listing's member_count counts only a group's own members."""
    live: list[dict[str, Any]] = [
        {"id": "top", "name": "Company", "member_count": 0, "permissions": {"chat": {"file_upload": True}}},
        {"id": "mid", "name": "Legal", "member_count": 0, "parent_group_id": "top", "permissions": {}},
        {"id": "leaf", "name": "Analysts", "member_count": 2, "parent_group_id": "mid"},
        {"id": "lone", "name": "Lone", "member_count": 0, "permissions": {"chat": {"file_upload": False}}},
        {"id": "a", "name": "A", "member_count": 0, "parent_group_id": "b"},  # a loop, as a broken import could leave
        {"id": "b", "name": "B", "member_count": 0, "parent_group_id": "a"},
    ]
    by_id = {g["id"]: g for g in live}
    assert group_has_members(by_id["top"], live) and group_has_members(by_id["mid"], live)
    assert not group_has_members(by_id["lone"], live) and not group_has_members(by_id["a"], live)
    assert group_file_upload(by_id["leaf"], live) is True  # granted two levels up
    assert group_file_upload(by_id["lone"], live) is False and group_file_upload(by_id["a"], live) is None
    assert groups_below_that_may_upload(by_id["mid"], live) == ["Analysts"]  # granted above mid, members in leaf
    assert groups_below_that_may_upload(by_id["leaf"], live) == []  # nothing below it
    assert groups_below_that_may_upload(by_id["a"], live) == []  # a loop ends
    # Open WebUI's most permissive of the default and the grants on the way up; unknown stays unknown
    assert members_may_upload(by_id["lone"], live, True) is True
    assert members_may_upload(by_id["leaf"], live, False) is True
    assert members_may_upload(by_id["lone"], live, False) is False
    assert members_may_upload(by_id["lone"], live, None) is None  # its own False, the default unread


def test_prune_keeps_an_own_group_whose_members_are_in_a_group_below_it() -> None:
    live: list[dict[str, Any]] = [
        {"id": "1", "name": "Parent", "data": OWN, "member_count": 0},
        {"id": "2", "name": "Child", "member_count": 4, "parent_group_id": "1"},
    ]
    empty, kept = stale_own_groups(live, [])
    assert empty == [] and [g["id"] for g in kept] == ["1"]


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


def test_a_plan_that_only_deletes_a_group_is_not_shown_as_no_changes() -> None:
    """--prune with only an own empty group to delete: the plan says so, and so does the result."""
    from provisioner.render import applied_line, group_writes, summary_line
    from provisioner.render_markdown import render_markdown

    plan_json: dict[str, Any] = {
        "summary": {"add": 0, "change": 0, "destroy": 0},
        "changes": [],
        "orphans": [],
        "wrappers": [],
        "notes": [],
        "groups": [{"name": "Old", "id": "g9", "action": "delete"}, {"name": "Kept", "action": "keep"}],
    }
    assert summary_line(plan_json["summary"], group_writes(plan_json)) == (
        "Plan: 0 to add, 0 to change, 0 to destroy; groups: 1 to delete."
    )
    markdown = render_markdown(plan_json)
    assert "No changes" not in markdown and "groups: 1 to delete" in markdown and "`Old`" in markdown
    result = {"applied": {"add": 0, "change": 0, "destroy": 0}, "groups_created": ["New"], "groups_deleted": ["Old"]}
    assert applied_line(result) == "Applied: 0 added, 0 changed, 0 destroyed; groups: 1 created, 1 deleted."


# --- what a plan does with a group (plan.GroupAction) -----------------------------------------------


def test_group_actions_reach_the_plan_json_as_before() -> None:
    from provisioner.plan import GroupAction, Plan

    plan = Plan(
        changes=(),
        groups=(
            GroupAction("Legal", "create"),
            GroupAction("Old", "delete", "g-1"),
            GroupAction("Kept", "keep", "g-2"),
        ),
    )
    assert plan.to_json()["groups"] == [
        {"name": "Legal", "action": "create"},
        {"name": "Old", "id": "g-1", "action": "delete"},
        {"name": "Kept", "id": "g-2", "action": "keep"},
    ]
    assert [g.name for g in plan.group_creates] == ["Legal"] and [g.id for g in plan.group_deletes] == ["g-1"]


@pytest.mark.parametrize(("action", "ident"), [("delete", None), ("keep", None), ("create", "g-1"), ("skip", "g-1")])
def test_a_group_action_has_an_id_exactly_when_the_group_exists(action: str, ident: str | None) -> None:
    from provisioner.plan import GroupAction

    with pytest.raises(ValueError, match="group id"):
        GroupAction("Legal", action, ident)  # type: ignore[arg-type]  # the test's plain str
