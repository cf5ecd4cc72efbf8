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

    agents = [{"id": "counsel", "name": "Counsel", "access": {"groups": ["Legal"]}}]
    root = write_blueprint_dir(tmp_path / "bp", [blueprint("legal", agents=agents)])
    functions = tmp_path / "fn"
    if not functions.exists():
        write_function_dir(functions, root)
    desired = build_desired(load_catalog(root), load_function_files(functions), groups=groups)
    return make_plan(desired, observe(client.list_models(), client.list_functions()))


def test_apply_creates_a_missing_group_first_and_writes_its_real_id_and_fingerprint(tmp_path) -> None:
    """The plan shows a placeholder; only apply creates the group, then writes the grant with the
    id Open WebUI gave it, so the next plan is empty (the fingerprint follows the real id)."""
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
        plan = _legal_plan(tmp_path, client, {"Legal": placeholder_id("Legal")})
        plan = dataclasses.replace(plan, groups=({"name": "Legal", "action": "create"},))
        assert fake.groups == [] and not plan.is_empty  # planning wrote nothing

        report = apply_plan(plan, client)

        [group] = fake.groups
        assert group["name"] == "Legal" and is_own_group(group) and report.groups_created == ["Legal"]
        row = fake.models["aihub_agent_pipe.legal.counsel"]
        assert [g["principal_id"] for g in row["access_grants"]] == [group["id"]]
        written = row["meta"]["aihub"]["written"]
        assert written["access_grants"] == digest(row["access_grants"])
        assert _legal_plan(tmp_path, client, {"Legal": group["id"]}).changes == ()
