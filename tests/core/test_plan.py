"""The plan: only owned fields are compared, unowned fields survive, ownership is respected."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from provisioner import __version__
from provisioner.errors import OwnershipError, PruneRefusedError
from provisioner.openwebui.observed import observe
from provisioner.plan import Action, make_plan
from provisioner.state import InstanceState, ObjectState

MARKER = {"managed_by": "aihub-provision", "blueprint": "demo", "agent": "a", "features": []}


def desired_row(**overrides: Any) -> ObjectState:
    fields = {
        "name": "Agent A",
        "base_model_id": None,
        "is_active": True,
        "meta.description": "d",
        "meta.capabilities.web_search": False,
        "meta.filterIds": ["aihub_feature_filter"],
        "meta.aihub": MARKER,
        "access_grants": [],
        **overrides,
    }
    return ObjectState("model", "aihub_agent_pipe.demo.a", fields)


def live_row(**meta_extra: Any) -> dict[str, Any]:
    return {
        "id": "aihub_agent_pipe.demo.a",
        "user_id": "u1",
        "base_model_id": None,
        "name": "Agent A",
        "params": {"temperature": 0.2},
        "meta": {
            "description": "d",
            "capabilities": {"web_search": False, "admin_own_key": True},
            "filterIds": ["aihub_feature_filter"],
            "aihub": MARKER,
            "profile_image_url": "data:image/png;base64,AAAA",
            **meta_extra,
        },
        "access_grants": [],
        "is_active": True,
        "version_id": "v1",
        "created_at": 1,
        "updated_at": 1,
    }


def desired(*rows: ObjectState) -> InstanceState:
    return InstanceState(models={r.id: r for r in rows})


def test_matching_instance_gives_an_empty_plan() -> None:
    plan = make_plan(desired(desired_row()), observe([live_row()], []))
    assert plan.is_empty and plan.summary == {"add": 0, "change": 0, "destroy": 0}


def test_a_changed_owned_field_is_exactly_one_field_change() -> None:
    live = live_row()
    live["meta"]["capabilities"]["web_search"] = True
    [change] = make_plan(desired(desired_row()), observe([live], [])).changes
    assert change.action is Action.UPDATE
    assert [(f.path, f.before, f.after) for f in change.fields] == [("meta.capabilities.web_search", True, False)]


def test_update_body_keeps_fields_we_do_not_own() -> None:
    live = live_row(tags=[{"name": "admin-tag"}])
    live["name"] = "Renamed by admin"
    [change] = make_plan(desired(desired_row()), observe([live], [])).changes
    body = change.body
    assert body is not None
    assert body["name"] == "Agent A"
    assert body["params"] == {"temperature": 0.2}
    assert body["meta"]["capabilities"] == {"web_search": False, "admin_own_key": True}
    assert body["meta"]["tags"] == [{"name": "admin-tag"}]
    assert body["meta"]["profile_image_url"] == "data:image/png;base64,AAAA"
    assert not {"user_id", "version_id", "created_at", "updated_at"} & set(body)
    assert body["commit_message"] == f"provision {__version__} sync"  # shows in Open WebUI's history


def test_plan_does_not_mutate_the_observed_record() -> None:
    live = live_row()
    live["meta"]["capabilities"]["web_search"] = True
    before = copy.deepcopy(live)
    make_plan(desired(desired_row()), observe([live], []))
    assert live == before


def test_missing_row_is_created_with_grants() -> None:
    row = desired_row(access_grants=[{"principal_type": "user", "principal_id": "*", "permission": "read"}])
    [change] = make_plan(desired(row), observe([], [])).changes
    assert change.action is Action.CREATE and change.body is not None
    assert change.body["access_grants"] == row.fields["access_grants"]
    assert change.body["meta"]["capabilities"] == {"web_search": False}


def test_row_without_marker_is_a_conflict_not_an_update() -> None:
    live = live_row()
    del live["meta"]["aihub"]
    with pytest.raises(OwnershipError) as info:
        make_plan(desired(desired_row()), observe([live], []))
    assert info.value.conflicts == (("model", "aihub_agent_pipe.demo.a"),)
    assert "--adopt" in str(info.value)


def test_adopting_an_unmarked_row_updates_it_and_adds_the_marker() -> None:
    live = live_row()
    del live["meta"]["aihub"]
    plan = make_plan(desired(desired_row()), observe([live], []), adopt={("model", "aihub_agent_pipe.demo.a")})
    [change] = plan.changes
    assert [f.path for f in change.fields] == ["meta.aihub"]
    assert plan.adopted == (("model", "aihub_agent_pipe.demo.a"),)


def test_prune_deletes_managed_extras_and_never_unmanaged_rows() -> None:
    extra = live_row()
    extra["id"] = "aihub_agent_pipe.old.gone"
    foreign = {"id": "gpt-4o", "meta": {"capabilities": {}}, "name": "GPT"}
    observed = observe([live_row(), extra, foreign], [])
    plan = make_plan(desired(desired_row()), observed, prune=True)
    assert [(c.action, c.id) for c in plan.changes] == [(Action.DELETE, "aihub_agent_pipe.old.gone")]
    kept = make_plan(desired(desired_row()), observed, prune=False)
    assert kept.is_empty and kept.orphans == (("model", "aihub_agent_pipe.old.gone"),)


def test_prune_with_nothing_desired_is_refused() -> None:
    with pytest.raises(PruneRefusedError):
        make_plan(InstanceState(), observe([live_row()], []), prune=True)


def test_function_flags_compare_and_content_shows_as_hash() -> None:
    fn = ObjectState(
        "function",
        "aihub_feature_filter",
        {
            "name": "F",
            "meta.description": "",
            "content": "new",
            "is_active": True,
            "is_global": False,
            "meta.aihub": {"managed_by": "aihub-provision"},
        },
    )
    live = {
        "id": "aihub_feature_filter",
        "name": "F",
        "content": "old",
        "is_active": False,
        "is_global": False,
        "meta": {
            "description": "",
            "manifest": {"title": "F"},
            "toggle": False,
            "aihub": {"managed_by": "aihub-provision"},
        },
        "valves": {},
    }
    plan = make_plan(InstanceState(functions={fn.id: fn}), observe([], [live]))
    [change] = plan.changes
    assert {f.path for f in change.fields} == {"content", "is_active"}
    assert change.body is not None and "manifest" not in change.body["meta"] and "is_active" not in change.body
    fields = plan.to_json()["changes"][0]["fields"]
    content = next(f for f in fields if f["path"] == "content")
    assert content["before"].startswith("sha256:") and content["after"].startswith("sha256:")


def test_sensitive_values_never_reach_the_json_plan() -> None:
    fn = ObjectState(
        "function", "aihub_agent_pipe", {"valves.API_KEYS": '{"K": "s3cret"}'}, sensitive=frozenset({"valves.API_KEYS"})
    )
    live = {
        "id": "aihub_agent_pipe",
        "meta": {"aihub": {"managed_by": "aihub-provision"}},
        "valves": {"API_KEYS": '{"K": "old-s3cret"}'},
    }
    plan = make_plan(InstanceState(functions={fn.id: fn}), observe([], [live]))
    text = str(plan.to_json())
    assert "s3cret" not in text and "(sensitive)" in text


def test_json_plan_shape() -> None:
    data = make_plan(desired(desired_row()), observe([], [])).to_json()
    assert data["format_version"] == "1"
    assert data["summary"] == {"add": 1, "change": 0, "destroy": 0}
    assert data["changes"][0]["kind"] == "model" and data["changes"][0]["action"] == "create"
