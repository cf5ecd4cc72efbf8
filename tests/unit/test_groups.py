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


def _legal_plan(tmp_path, client, groups):
    from provisioner.desired import build_desired
    from provisioner.loader import load_catalog
    from provisioner.function_files import load_function_files
    from provisioner.observed import observe
    from provisioner.plan import make_plan
    from tests.builders import blueprint, write_blueprint_dir, write_function_dir

    agents = [{"id": "counsel", "name": "Counsel", "access": {"groups": ["Legal", "Audit"]}}]
    root = write_blueprint_dir(tmp_path / "bp", [blueprint("legal", agents=agents)])
    functions = tmp_path / "fn"
    if not functions.exists():
        write_function_dir(functions, root)
    desired = build_desired(load_catalog(root), load_function_files(functions), groups=groups)
    return make_plan(desired, observe(client.list_models(), client.list_functions()))


def test_apply_creates_a_missing_group_first_and_writes_its_real_id_and_fingerprint(tmp_path) -> None:
    """The plan shows placeholders; only apply creates the groups, then writes the grants with the
    ids Open WebUI gave them, sorted as a plan sorts them (the real ids sort unlike the
    placeholders here), so the check after the last write sees no other writer and the next plan
    is empty (the fingerprint follows the real ids)."""
    import dataclasses

    import respx

    from provisioner.apply import apply_plan
    from provisioner.client import OpenWebUIClient
    from provisioner.fingerprint import digest
    from provisioner.groups import placeholder_id
    from tests.fake_owui import FakeOpenWebUI

    with respx.mock(assert_all_called=False) as router:
        fake = FakeOpenWebUI()
        fake.mount(router)
        client = OpenWebUIClient(base_url=fake.base_url, token="sk-test", sleep=lambda s: None, retries=1)
        names = ("Legal", "Audit")  # created in this order: Legal gets g1, Audit g2
        plan = _legal_plan(tmp_path, client, {n: placeholder_id(n) for n in names})
        plan = dataclasses.replace(plan, groups=tuple({"name": n, "action": "create"} for n in names))
        assert fake.groups == [] and not plan.is_empty and plan.read is not None  # planning wrote nothing

        report = apply_plan(plan, client)

        assert [(g["name"], g["id"]) for g in fake.groups] == [("Legal", "g1"), ("Audit", "g2")]
        assert all(is_own_group(g) for g in fake.groups) and report.groups_created == ["Legal", "Audit"]
        assert report.conflicts == []
        row = fake.models["aihub_agent_pipe.legal.counsel"]
        assert sorted(g["principal_id"] for g in row["access_grants"]) == ["g1", "g2"]
        written = row["meta"]["aihub"]["written"]
        assert written["access_grants"] == digest(sorted(row["access_grants"], key=lambda g: g["principal_id"]))
        assert _legal_plan(tmp_path, client, {"Legal": "g1", "Audit": "g2"}).changes == ()


def test_a_plan_that_only_deletes_a_group_is_not_shown_as_no_changes() -> None:
    """--prune with only an own empty group to delete: the plan says so, and so does the result."""
    from provisioner.render import applied_line, summary_line, group_writes
    from provisioner.render_markdown import render_markdown

    plan_json = {"summary": {"add": 0, "change": 0, "destroy": 0}, "changes": [], "orphans": [], "wrappers": [],
                 "notes": [], "groups": [{"name": "Old", "id": "g9", "action": "delete"}, {"name": "Kept", "action": "keep"}]}
    assert summary_line(plan_json["summary"], group_writes(plan_json)) == (
        "Plan: 0 to add, 0 to change, 0 to destroy; groups: 1 to delete."
    )
    markdown = render_markdown(plan_json)
    assert "No changes" not in markdown and "groups: 1 to delete" in markdown and "`Old`" in markdown
    result = {"applied": {"add": 0, "change": 0, "destroy": 0}, "groups_created": ["New"], "groups_deleted": ["Old"]}
    assert applied_line(result) == "Applied: 0 added, 0 changed, 0 destroyed; groups: 1 created, 1 deleted."
