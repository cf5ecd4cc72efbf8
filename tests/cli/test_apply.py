"""Applying a plan: phase order, flag convergence by reading, stop on the first failure."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx

from provisioner.desired import build_desired
from provisioner.errors import ApplyError
from provisioner.function_files import load_function_files
from provisioner.loader import load_catalog
from provisioner.openwebui.apply import apply_plan
from provisioner.openwebui.client import OpenWebUIClient
from provisioner.openwebui.observed import observe
from provisioner.plan import make_plan
from tests.support.builders import REPO, report_of
from tests.support.fake_owui import FakeOpenWebUI


@pytest.fixture
def fake() -> Iterator[FakeOpenWebUI]:
    with respx.mock(assert_all_called=False) as router:
        server = FakeOpenWebUI()
        server.mount(router)
        yield server


@pytest.fixture
def client(fake: FakeOpenWebUI) -> OpenWebUIClient:
    return OpenWebUIClient(base_url=fake.base_url, token="sk-test", sleep=lambda s: None, retries=1)


def sample_plan(client: OpenWebUIClient, **kwargs):
    desired = build_desired(load_catalog(REPO / "blueprints"), load_function_files(REPO / "owui_functions"), groups={})
    return make_plan(desired, observe(client.list_models(), client.list_functions()), **kwargs)


def test_sync_from_empty_creates_functions_before_models_then_refreshes(
    fake: FakeOpenWebUI, client: OpenWebUIClient
) -> None:
    fake.calls.clear()
    apply_plan(sample_plan(client), client)
    paths = [p for _, p in fake.calls]
    # The listings before and after the writes (the conflict checks) are not part of a phase.
    last_function = max(i for i, p in enumerate(paths) if "/functions/" in p and not p.endswith("/export"))
    first_model = min(i for i, p in enumerate(paths) if "/models/create" in p)
    assert last_function < first_model
    assert paths[-1] == "/api/models" and fake.registry_refreshes == 1
    assert all(f["is_active"] for f in fake.functions.values())
    assert not any(f["is_global"] for f in fake.functions.values())


def test_second_plan_is_empty_and_applying_it_writes_nothing(fake: FakeOpenWebUI, client: OpenWebUIClient) -> None:
    apply_plan(sample_plan(client), client)
    fake.calls.clear()
    plan = sample_plan(client)
    assert plan.is_empty
    apply_plan(plan, client)
    assert fake.writes == []


def test_flags_are_flipped_only_when_the_live_value_differs(fake: FakeOpenWebUI, client: OpenWebUIClient) -> None:
    apply_plan(sample_plan(client), client)
    fake.functions["aihub_feature_filter"]["is_active"] = False
    fake.functions["aihub_feature_filter"]["is_global"] = True
    apply_plan(sample_plan(client), client)
    assert fake.functions["aihub_feature_filter"]["is_active"] is True
    assert fake.functions["aihub_feature_filter"]["is_global"] is False
    # someone else already fixed it between plan and apply: a conflict, and no flip back
    fake.functions["aihub_feature_filter"]["is_active"] = False
    plan = sample_plan(client)
    fake.functions["aihub_feature_filter"]["is_active"] = True
    with pytest.raises(ApplyError, match="aihub_feature_filter was changed .is_active."):
        apply_plan(plan, client)
    assert fake.functions["aihub_feature_filter"]["is_active"] is True


def test_access_change_uses_the_access_endpoint_only(fake: FakeOpenWebUI, client: OpenWebUIClient) -> None:
    apply_plan(sample_plan(client), client)
    fake.models["aihub_agent_pipe.policy-faq.default"]["access_grants"] = []
    fake.calls.clear()
    apply_plan(sample_plan(client), client)
    assert [p for _, p in fake.writes] == ["/api/v1/models/model/access/update", "/api/models"]


def test_failure_report_lists_applied_failed_and_not_attempted(fake: FakeOpenWebUI, client: OpenWebUIClient) -> None:
    plan = sample_plan(client)
    fake.faults.append(
        lambda method, path, body: (
            httpx.Response(500, json={"detail": "db locked"})
            if path == "/api/v1/models/create" and body["id"].endswith("research-assistant.default")
            else None
        )
    )
    with pytest.raises(ApplyError) as info:
        apply_plan(plan, client)
    report = report_of(info.value).to_json()
    assert [f["id"] for f in report["failed"]] == ["aihub_agent_pipe.research-assistant.default"]
    functions = sum(1 for c in plan.changes if c.kind == "function")
    assert report["applied"]["add"] == functions + 2  # the functions, then the 2 models sorted before it
    assert len(report["not_attempted"]) == 3
    assert report["registry_refreshed"] is False
    message = str(info.value)
    assert "Run `provision sync` again" in message and "not attempted" in message and "db locked" in message


def test_the_next_sync_after_a_failure_repairs_without_duplicates(fake: FakeOpenWebUI, client: OpenWebUIClient) -> None:
    fake.faults.append(lambda method, path, body: httpx.Response(503) if path == "/api/v1/models/create" else None)
    with pytest.raises(ApplyError):
        apply_plan(sample_plan(client), client)
    fake.faults.clear()
    apply_plan(sample_plan(client), client)
    assert len(fake.models) == 6 and sample_plan(client).is_empty


def test_a_409_on_update_rereads_the_row_so_a_concurrent_admin_edit_survives(
    fake: FakeOpenWebUI, client: OpenWebUIClient
) -> None:
    apply_plan(sample_plan(client), client)
    model_id = "aihub_agent_pipe.policy-faq.default"
    fake.models[model_id]["meta"]["capabilities"]["web_search"] = True  # drift: our field
    plan = sample_plan(client)
    conflicts: list[dict[str, Any]] = []

    def admin_writes_first(method, path, body):
        if path == "/api/v1/models/model/update" and not conflicts:
            conflicts.append(body)
            fake.models[model_id]["params"] = {"system": "written by an admin meanwhile"}
            return httpx.Response(409, json={"detail": {"code": "version_conflict"}})
        return None

    fake.faults.append(admin_writes_first)
    apply_plan(plan, client)
    row = fake.models[model_id]
    assert conflicts and row["meta"]["capabilities"]["web_search"] is False
    assert row["params"] == {"system": "written by an admin meanwhile"}
    assert ("GET", "/api/v1/models/model") in fake.calls


def test_parallel_model_writes_reach_the_same_end_state(fake: FakeOpenWebUI, client: OpenWebUIClient) -> None:
    report = apply_plan(sample_plan(client), client, parallelism=4)
    paths = [p for _, p in fake.calls]
    assert {r.outcome for r in report.results} == {"applied"}
    assert len(fake.models) == 6 and sample_plan(client).is_empty
    # The listings before and after the writes (the conflict checks) are not part of a phase.
    last_function = max(i for i, p in enumerate(paths) if "/functions/" in p and not p.endswith("/export"))
    assert last_function < min(i for i, p in enumerate(paths) if "/models/create" in p)


def test_parallel_apply_starts_nothing_after_a_failure(fake: FakeOpenWebUI, client: OpenWebUIClient) -> None:
    plan = sample_plan(client)
    models = [c.id for c in plan.changes if c.kind == "model"]
    fake.faults.append(
        lambda method, path, body: (
            httpx.Response(500, json={"detail": "db locked"})
            if path == "/api/v1/models/create" and body["id"] == models[0]
            else None
        )
    )
    with pytest.raises(ApplyError) as info:
        apply_plan(plan, client, parallelism=2)
    outcomes = {r.change.id: r.outcome for r in report_of(info.value).results}
    assert outcomes[models[0]] == "failed"
    # the other worker's write may have finished; nothing beyond the two in flight started
    started = [m for m in models if outcomes[m] != "not attempted"]
    assert len(started) <= 2 + 1 and all(outcomes[m] == "not attempted" for m in models[3:])
    assert set(fake.models) == {m for m in models if outcomes[m] == "applied"}
    fake.faults.clear()
    apply_plan(sample_plan(client), client, parallelism=2)
    assert sample_plan(client).is_empty
