"""Apply creates the groups a plan needs before the first row and writes their real ids (the
pure parts of groups: tests/core/test_groups.py)."""

from __future__ import annotations

from typing import Any

from provisioner.groups import is_own_group
from provisioner.plan import GroupAction
from tests.support.builders import report_of


def _legal_plan(tmp_path, client, groups):
    from provisioner.desired import build_desired
    from provisioner.function_files import load_function_files
    from provisioner.loader import load_catalog
    from provisioner.openwebui.observed import observe
    from provisioner.plan import make_plan
    from tests.support.builders import blueprint, write_blueprint_dir, write_function_dir

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

    from provisioner.fingerprint import digest
    from provisioner.groups import placeholder_id
    from provisioner.openwebui.apply import apply_plan
    from provisioner.openwebui.client import OpenWebUIClient
    from tests.support.fake_owui import FakeOpenWebUI

    with respx.mock(assert_all_called=False) as router:
        fake = FakeOpenWebUI()
        fake.mount(router)
        client = OpenWebUIClient(base_url=fake.base_url, token="sk-test", sleep=lambda s: None, retries=1)
        names = ("Legal", "Audit")  # created in this order: Legal gets g1, Audit g2
        plan = _legal_plan(tmp_path, client, {n: placeholder_id(n) for n in names})
        plan = dataclasses.replace(plan, groups=tuple(GroupAction(n, "create") for n in names))
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


def test_a_group_open_webui_gives_no_id_stops_apply_before_the_first_row(tmp_path) -> None:
    """An answer without the id, and a listing without it either: no grant may name "" (nobody)."""
    import dataclasses

    import pytest
    import respx

    from provisioner.errors import ApplyError
    from provisioner.groups import placeholder_id
    from provisioner.openwebui.apply import apply_plan
    from provisioner.openwebui.client import OpenWebUIClient
    from tests.support.fake_owui import FakeOpenWebUI

    with respx.mock(assert_all_called=False) as router:
        fake = FakeOpenWebUI()
        fake.mount(router)
        client = OpenWebUIClient(base_url=fake.base_url, token="sk-test", sleep=lambda s: None, retries=1)
        # this Open WebUI answers without the id, and lists none
        client.create_group = lambda form: {"name": form["name"]}  # type: ignore[method-assign]
        plan = _legal_plan(tmp_path, client, {n: placeholder_id(n) for n in ("Legal", "Audit")})
        plan = dataclasses.replace(plan, groups=(GroupAction("Legal", "create"),))

        with pytest.raises(ApplyError) as raised:
            apply_plan(plan, client)

        report = report_of(raised.value)
        assert "gave no id for the group(s) 'Legal'" in report.failure_message()
        assert fake.models == {} and fake.functions == {}  # no row written
        assert {r.outcome for r in report.results} == {"not attempted"}


def _fake_client():
    import respx

    from provisioner.openwebui.client import OpenWebUIClient
    from tests.support.fake_owui import FakeOpenWebUI

    router = respx.mock(assert_all_called=False)
    router.start()
    fake = FakeOpenWebUI()
    fake.mount(router)
    return router, fake, OpenWebUIClient(base_url=fake.base_url, token="sk-test", sleep=lambda s: None, retries=2)


def test_a_create_that_fails_part_way_leaves_only_groups_the_report_names_and_the_next_sync_reuses_them(
    tmp_path,
) -> None:
    """Legal is created, Audit fails: no row is written, the report names Legal, Legal carries
    provision's marker (so --prune can find it), and the next sync creates Audit alone."""
    import dataclasses

    import httpx
    import pytest

    from provisioner.errors import ApplyError
    from provisioner.groups import placeholder_id
    from provisioner.openwebui.apply import apply_plan

    router, fake, client = _fake_client()
    try:
        names = ("Legal", "Audit")
        refuse = lambda method, path, body: (  # noqa: E731 (a fault rule, inline)
            httpx.Response(400, json={"detail": "no"})
            if path.endswith("/groups/create") and body["name"] == "Audit"
            else None
        )
        fake.faults.append(refuse)
        plan = _legal_plan(tmp_path, client, {n: placeholder_id(n) for n in names})
        plan = dataclasses.replace(plan, groups=tuple(GroupAction(n, "create") for n in names))
        with pytest.raises(ApplyError) as raised:
            apply_plan(plan, client)
        report = report_of(raised.value)
        assert [g["name"] for g in fake.groups] == ["Legal"] and is_own_group(fake.groups[0])
        assert report.groups_created == ["Legal"] and "(created before it: Legal)" in report.failure_message()
        assert fake.models == {} and {r.outcome for r in report.results} == {"not attempted"}

        fake.faults.remove(refuse)
        plan = _legal_plan(tmp_path, client, {"Legal": "g1", "Audit": placeholder_id("Audit")})
        plan = dataclasses.replace(plan, groups=(GroupAction("Audit", "create"),))
        assert apply_plan(plan, client).groups_created == ["Audit"]
        assert sorted(g["name"] for g in fake.groups) == ["Audit", "Legal"]  # no second Legal
    finally:
        router.stop()


def test_a_group_create_whose_answer_was_lost_is_not_made_twice(tmp_path) -> None:
    """Open WebUI 0.12.4 does not refuse a second group of the same name (Groups.insert_new_group),
    so a retried create whose first answer was lost would leave a group nothing records: the
    retry first looks for the group provision made."""
    import dataclasses

    from provisioner.groups import placeholder_id
    from provisioner.openwebui.apply import apply_plan

    router, fake, client = _fake_client()
    try:
        lost: list[dict[str, Any]] = []

        def lose_first_audit(method, path, body):
            if path.endswith("/groups/create") and body["name"] == "Audit" and not lost:
                lost.append(body)
                return True
            return False

        fake.lost_answers.append(lose_first_audit)
        names = ("Legal", "Audit")
        plan = _legal_plan(tmp_path, client, {n: placeholder_id(n) for n in names})
        plan = dataclasses.replace(plan, groups=tuple(GroupAction(n, "create") for n in names))
        report = apply_plan(plan, client)
        assert lost and sorted(g["name"] for g in fake.groups) == ["Audit", "Legal"], fake.groups
        assert report.groups_created == ["Legal", "Audit"]
        audit = next(g["id"] for g in fake.groups if g["name"] == "Audit")
        grants = fake.models["aihub_agent_pipe.legal.counsel"]["access_grants"]
        assert audit in {g["principal_id"] for g in grants}
    finally:
        router.stop()
