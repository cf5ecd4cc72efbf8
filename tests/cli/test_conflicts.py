"""Another writer between the plan's read and apply, or during apply: named, never mixed in silently.

Against the in-memory Open WebUI: its rows carry `updated_at` as the real ones do, and a test
edits a row (or bumps the stamp) where another sync or an admin would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from provisioner.conflicts import Conflict, Key, Seen, changed_since_read, changed_since_write
from provisioner.desired import build_desired
from provisioner.errors import ApplyError
from provisioner.function_files import load_function_files
from provisioner.loader import load_catalog
from provisioner.openwebui.apply import apply_plan
from provisioner.openwebui.client import OpenWebUIClient
from provisioner.openwebui.observed import observe
from provisioner.plan import Plan, make_plan
from provisioner.state import InstanceState, ObjectState
from tests.support.builders import REPO, report_of
from tests.support.fake_owui import FakeOpenWebUI, mounted_fake

POLICY = "aihub_agent_pipe.policy-faq.default"
RESEARCH = "aihub_agent_pipe.research-assistant.default"
PIPE = "aihub_agent_pipe"
READ_AT = 1_764_650_000  # 2025-12-02 04:33:20 UTC
EDITED_AT = READ_AT + 75


@pytest.fixture
def fake() -> Iterator[FakeOpenWebUI]:
    with mounted_fake() as server:
        yield server


@pytest.fixture
def client(fake: FakeOpenWebUI) -> OpenWebUIClient:
    return OpenWebUIClient(base_url=fake.base_url, token="sk-conflicts", sleep=lambda s: None, retries=1)


def sample_plan(client: OpenWebUIClient) -> Plan:
    desired = build_desired(load_catalog(REPO / "blueprints"), load_function_files(REPO / "owui_functions"), groups={})
    return make_plan(desired, observe(client.list_models(), client.list_functions()))


@pytest.fixture
def drifted(fake: FakeOpenWebUI, client: OpenWebUIClient) -> FakeOpenWebUI:
    """Synced, every object stamped READ_AT, and two rows drifted so the next plan writes them."""
    apply_plan(sample_plan(client), client)
    for row in [*fake.models.values(), *fake.functions.values()]:
        row["updated_at"] = READ_AT
    fake.models[POLICY]["name"] = "drifted"
    fake.models[RESEARCH]["name"] = "drifted too"
    return fake


def writes(fake: FakeOpenWebUI) -> list[tuple[str, str]]:
    return [c for c in fake.writes if c[1] != "/api/models"]


def test_a_row_an_admin_edited_between_plan_and_apply_is_a_conflict_and_nothing_is_written(
    drifted: FakeOpenWebUI, client: OpenWebUIClient
) -> None:
    plan = sample_plan(client)
    drifted.models[POLICY]["params"] = {"system": "an admin's prompt"}  # a field provision does not own
    drifted.models[POLICY]["updated_at"] = EDITED_AT
    drifted.calls.clear()
    with pytest.raises(ApplyError) as info:
        apply_plan(plan, client)
    assert writes(drifted) == []
    assert drifted.models[POLICY]["params"] == {"system": "an admin's prompt"}
    report = report_of(info.value)
    [conflict] = report.conflicts
    assert (conflict.kind, conflict.id, conflict.what, conflict.after_write) == ("model", POLICY, "changed", False)
    outcomes = {r.change.id: r.outcome for r in report.results}
    assert outcomes[POLICY] == "failed" and outcomes[RESEARCH] == "not attempted"
    message = str(info.value)
    assert "Nothing was written" in message and "another sync running at the same time" in message
    assert f"FAILED         update model {POLICY}: model {POLICY} was changed at 2025-12-02 04:34:35 UTC" in message
    assert "; the plan read it as last changed at 2025-12-02 04:33:20 UTC" in message
    assert report.to_json()["conflicts"][0]["updated_at"] == EDITED_AT


def test_an_owned_field_edited_within_the_same_second_is_still_a_conflict(
    drifted: FakeOpenWebUI, client: OpenWebUIClient
) -> None:
    plan = sample_plan(client)
    drifted.models[POLICY]["meta"]["description"] = "edited, updated_at unchanged"
    with pytest.raises(ApplyError) as info:
        apply_plan(plan, client)
    [conflict] = report_of(info.value).conflicts
    assert conflict.paths == ("meta.description",) and "(meta.description)" in conflict.message


def test_a_row_the_plan_does_not_write_that_changed_is_a_conflict_too(
    drifted: FakeOpenWebUI, client: OpenWebUIClient
) -> None:
    """Another blueprint version changed a row this plan keeps: going on would leave a mix."""
    plan = sample_plan(client)
    untouched = next(i for i in drifted.models if i not in (POLICY, RESEARCH))
    drifted.models[untouched]["meta"]["description"] = "from version B"
    drifted.models[untouched]["updated_at"] = EDITED_AT
    with pytest.raises(ApplyError) as info:
        apply_plan(plan, client)
    assert [c.id for c in report_of(info.value).conflicts] == [untouched]
    assert {r.outcome for r in report_of(info.value).results} == {"not attempted"}
    assert f"CONFLICT       model {untouched} was changed (meta.description) at" in str(info.value)


def test_a_valve_changed_since_the_plan_is_named_without_its_value(
    drifted: FakeOpenWebUI, client: OpenWebUIClient
) -> None:
    plan = sample_plan(client)
    secret = "sk-another-writers-backend-key"
    drifted.functions[PIPE]["valves"] = {**drifted.functions[PIPE]["valves"], "API_KEYS": json.dumps({"K": secret})}
    drifted.functions[PIPE]["updated_at"] = EDITED_AT
    with pytest.raises(ApplyError) as info:
        apply_plan(plan, client)
    message = str(info.value)
    assert f"function {PIPE} was changed (valves.API_KEYS) at 2025-12-02 04:34:35 UTC" in message
    assert secret not in message and secret not in json.dumps(report_of(info.value).to_json())


def test_a_valve_key_the_plan_did_not_read_added_within_the_same_second_is_a_conflict(
    drifted: FakeOpenWebUI, client: OpenWebUIClient
) -> None:
    """The plan would write the pipe's valves: a key another writer added since (its stamp the
    same second) would be lost to that write, so nothing is written."""
    drifted.functions[PIPE]["valves"] = {**drifted.functions[PIPE]["valves"], "AGENTS": "[]"}  # the plan writes it
    plan = sample_plan(client)
    assert any(c.id == PIPE and c.changed("valves") for c in plan.changes)
    drifted.functions[PIPE]["valves"] = {**drifted.functions[PIPE]["valves"], "MAX_IMAGE_MB": 1}
    assert drifted.functions[PIPE]["updated_at"] == READ_AT  # within the second the plan read
    drifted.calls.clear()
    with pytest.raises(ApplyError) as info:
        apply_plan(plan, client)
    assert writes(drifted) == []
    [conflict] = report_of(info.value).conflicts
    assert (conflict.kind, conflict.id, conflict.paths) == ("function", PIPE, ("valves.MAX_IMAGE_MB",))
    assert drifted.functions[PIPE]["valves"]["MAX_IMAGE_MB"] == 1


def test_a_managed_row_created_since_the_plan_is_a_conflict(drifted: FakeOpenWebUI, client: OpenWebUIClient) -> None:
    plan = sample_plan(client)
    other = "aihub_agent_pipe.from-version-b.default"
    drifted.models[other] = {**json.loads(json.dumps(drifted.models[POLICY])), "id": other, "updated_at": EDITED_AT}
    with pytest.raises(ApplyError) as info:
        apply_plan(plan, client)
    [conflict] = report_of(info.value).conflicts
    assert (conflict.id, conflict.what) == (other, "created")
    assert f"model {other} was created at 2025-12-02 04:34:35 UTC after this sync's plan read the instance" in str(
        info.value
    )


def test_a_row_overwritten_by_another_writer_during_apply_fails_the_sync_after_its_writes(
    drifted: FakeOpenWebUI, client: OpenWebUIClient
) -> None:
    """The other sync writes POLICY back to its version after this one wrote it."""
    plan = sample_plan(client)
    ours: list[Any] = []

    def other_sync_writes_after_us(method: str, path: str, body: Any) -> None:
        if path == "/api/v1/models/model/update" and body["id"] == RESEARCH:  # after POLICY was written
            drifted.models[POLICY]["name"] = "Policy FAQ (version B)"
            drifted.models[POLICY]["updated_at"] = EDITED_AT
            ours.append(body)
        return None

    drifted.faults.append(other_sync_writes_after_us)
    with pytest.raises(ApplyError) as info:
        apply_plan(plan, client)
    report = report_of(info.value)
    assert ours and {r.outcome for r in report.results} == {"applied"}
    [conflict] = report.conflicts
    assert (conflict.id, conflict.paths, conflict.after_write) == (POLICY, ("name",), True)
    assert report.registry_refreshed is False
    message = str(info.value)
    assert "Sync finished its writes, but another writer changed the instance meanwhile" in message
    assert (
        f"CONFLICT       model {POLICY} was changed (name) at 2025-12-02 04:34:35 UTC after this sync wrote it"
        in message
    )
    # the re-run converges
    drifted.faults.clear()
    apply_plan(sample_plan(client), client)
    assert sample_plan(client).is_empty


def test_a_sync_with_no_other_writer_reads_each_listing_twice_more_and_no_row(
    drifted: FakeOpenWebUI, client: OpenWebUIClient
) -> None:
    """The cost of the checks: one listing per kind before the writes, one after; no per-row read."""
    plan = sample_plan(client)
    drifted.calls.clear()
    apply_plan(plan, client)
    reads = [p for m, p in drifted.calls if m == "GET" and p != "/api/models"]
    assert sorted(reads) == sorted(["/api/v1/models/all", "/api/v1/functions/export"] * 2)


def test_a_plan_built_by_hand_is_applied_without_checks(fake: FakeOpenWebUI, client: OpenWebUIClient) -> None:
    plan = sample_plan(client)
    bare = Plan(plan.changes)
    fake.calls.clear()
    apply_plan(bare, client)
    assert ("GET", "/api/v1/models/all") not in fake.calls


# -- the comparison itself ---------------------------------------------------------------------


def _state(*objects: ObjectState) -> InstanceState:
    return InstanceState(
        models={o.id: o for o in objects if o.kind == "model"},
        functions={o.id: o for o in objects if o.kind == "function"},
    )


def _row(ident: str, stamp: int | None, **fields: Any) -> ObjectState:
    return ObjectState("model", ident, fields, True, {"updated_at": stamp})


def test_only_the_stamp_moving_is_a_change_of_a_row_only_read() -> None:
    read: dict[Key, Seen] = {("model", "m"): Seen({"name": "a"}, READ_AT)}
    [conflict] = changed_since_read(read, _state(_row("m", EDITED_AT, name="a")), creates=())
    assert conflict.paths == () and conflict.read_at == READ_AT and conflict.changed_at == EDITED_AT
    assert changed_since_read(read, _state(_row("m", READ_AT, name="a")), creates=()) == []


def test_a_row_this_sync_wrote_is_judged_by_its_fields_not_its_new_stamp() -> None:
    read: dict[Key, Seen] = {("model", "m"): Seen({"name": "a"}, READ_AT)}
    now = _state(_row("m", EDITED_AT, name="b"))
    assert changed_since_write(read, now, written={("model", "m"): {"name": "b"}}) == []
    [conflict] = changed_since_write(read, now, written={("model", "m"): {"name": "c"}})
    assert conflict == Conflict("model", "m", "changed", True, None, EDITED_AT, ("name",))


def test_a_row_this_sync_deleted_that_came_back_is_a_conflict() -> None:
    read: dict[Key, Seen] = {("model", "m"): Seen({"name": "a"}, READ_AT)}
    [conflict] = changed_since_write(read, _state(_row("m", EDITED_AT, name="a")), written={("model", "m"): None})
    assert conflict.what == "created" and "after this sync wrote the instance" in conflict.message
    assert changed_since_write(read, _state(), written={("model", "m"): None}) == []


def test_a_row_deleted_by_another_writer_is_named() -> None:
    read: dict[Key, Seen] = {("model", "m"): Seen({"name": "a"}, READ_AT)}
    [conflict] = changed_since_read(read, _state(), creates=())
    assert conflict.message == "model m was deleted after this sync's plan read it"


def test_unmanaged_rows_appearing_are_none_of_the_checks_business() -> None:
    plain = ObjectState("model", "gpt-4o", {"name": "GPT"}, False, {"updated_at": EDITED_AT})
    assert changed_since_read({}, _state(plain), creates=()) == []
    [conflict] = changed_since_read({}, _state(plain), creates=[("model", "gpt-4o")])
    assert conflict.what == "created"


def test_a_long_list_of_conflicts_names_the_first_ten_and_counts_the_rest() -> None:
    from provisioner.openwebui.apply import ApplyReport

    report = ApplyReport(
        conflicts=[Conflict("model", f"m{i:02}", "changed", True, None, EDITED_AT, ("name",)) for i in range(12)]
    )
    lines = report.failure_message().splitlines()
    assert [line.split()[2] for line in lines if "CONFLICT" in line][:10] == [f"m{i:02}" for i in range(10)]
    assert lines[-1] == "  CONFLICT       … and 2 more (`-o json` lists every one)"
    assert len(report.to_json()["conflicts"]) == 12


def test_sync_json_reports_the_conflict_and_exits_1(capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.fake_owui import fake_instance_for_cli
    from tests.support.run_cli import run_cli

    samples = ["-p", str(REPO / "blueprints"), "--bundle", str(REPO / "owui_functions")]
    with fake_instance_for_cli(monkeypatch, "sk-conflict-cli-token-0123456789") as fake:
        assert run_cli(capsys, "sync", "--yes", *samples)[0] == 0
        fake.models[POLICY]["name"] = "drifted"
        listings = []

        def admin_edits_after_the_plan(method: str, path: str, body: Any) -> None:
            if path == "/api/v1/models/all":
                listings.append(path)
                if len(listings) == 2:  # the check before the first write
                    fake.models[RESEARCH]["meta"]["description"] = "an admin's words"
            return None

        fake.faults.append(admin_edits_after_the_plan)
        code, out, err = run_cli(capsys, "sync", "--yes", "-o", "json", *samples)
    assert code == 1
    result = json.loads(out)["result"]
    assert [(c["id"], c["what"], c["fields"]) for c in result["conflicts"]] == [
        (RESEARCH, "changed", ["meta.description"])
    ]
    assert result["failed"] == [] and [c["id"] for c in result["not_attempted"]] == [POLICY]
    assert fake.models[POLICY]["name"] == "drifted"  # nothing written


def test_the_markdown_result_lists_a_conflict_once() -> None:
    from provisioner.render_markdown import result_markdown

    after = Conflict("model", "m", "changed", True, None, EDITED_AT, ("name",))
    before = Conflict("model", "f", "changed", False, READ_AT, EDITED_AT, ())
    result = {
        "applied": {"add": 0, "change": 1, "destroy": 0},
        "failed": [{"kind": "model", "id": "f", "action": "update", "error": before.message}],
        "not_attempted": [],
        "conflicts": [after.to_json(), before.to_json()],
    }
    text = result_markdown(result)
    assert f"- conflict: `{after.message}`" in text
    assert text.count("model f was changed") == 1
