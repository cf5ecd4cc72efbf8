"""Suggestion prompts and tags come from the blueprint (issue 8 point 3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from provisioner.desired import build_desired
from provisioner.loader import load_catalog
from provisioner.openwebui.observed import observed_model
from provisioner.plan import make_plan
from provisioner.state import InstanceState
from tests.support.builders import REPO, SAMPLE_MODEL_IDS, blueprint, write_blueprint_dir

CARD = {"title": "Where is my order?", "subtitle": "status", "prompt": "Where is order 1?"}


def rows(root: Path):
    return build_desired(load_catalog(root), (), groups=None).models


def test_blueprint_suggestions_and_tags_land_on_every_agent_in_open_webuis_shape(tmp_path: Path) -> None:
    agents: list[dict[str, Any]] = [{"id": "a", "name": "A"}, {"id": "b", "name": "B", "tags": ["Billing", "Support"]}]
    root = write_blueprint_dir(tmp_path, [blueprint("desk", agents=agents, suggestions=[CARD], tags=["Support"])])
    models = rows(root)
    for agent in ("a", "b"):
        assert models[f"aihub_agent_pipe.desk.{agent}"].fields["meta.suggestion_prompts"] == [
            {"title": ["Where is my order?", "status"], "content": "Where is order 1?"}
        ]
    assert models["aihub_agent_pipe.desk.a"].fields["meta.tags"] == [{"name": "Support"}]
    # An agent's tags add to the blueprint's, once each.
    assert models["aihub_agent_pipe.desk.b"].fields["meta.tags"] == [{"name": "Support"}, {"name": "Billing"}]


def test_an_agents_suggestions_replace_the_blueprints_and_an_empty_list_means_none(tmp_path: Path) -> None:
    agents: list[dict[str, Any]] = [
        {"id": "own", "name": "Own", "suggestions": [{"title": "Refund", "prompt": "Refund order 2"}]},
        {"id": "none", "name": "None", "suggestions": []},
    ]
    root = write_blueprint_dir(tmp_path, [blueprint("desk", agents=agents, suggestions=[CARD])])
    models = rows(root)
    assert models["aihub_agent_pipe.desk.own"].fields["meta.suggestion_prompts"] == [
        {"title": ["Refund", ""], "content": "Refund order 2"}
    ]
    # [] is written: Open WebUI then shows no cards instead of its generic ones.
    assert models["aihub_agent_pipe.desk.none"].fields["meta.suggestion_prompts"] == []


def test_without_suggestions_or_tags_an_admins_own_survive_a_sync(tmp_path: Path) -> None:
    root = write_blueprint_dir(tmp_path, [blueprint("desk")])
    desired = rows(root)
    row = desired["aihub_agent_pipe.desk.default"]
    assert "meta.suggestion_prompts" not in row.fields and "meta.tags" not in row.fields
    live = {
        "id": row.id,
        "name": row.fields["name"],
        "base_model_id": None,
        "is_active": True,
        "params": {},
        "access_grants": [{"principal_type": "user", "principal_id": "*", "permission": "read"}],
        "meta": {
            **{k.removeprefix("meta."): v for k, v in row.fields.items() if k.startswith("meta.") and "." not in k[5:]},
            "capabilities": {
                k.removeprefix("meta.capabilities."): v
                for k, v in row.fields.items()
                if k.startswith("meta.capabilities.")
            },
            "tags": [{"name": "Mine"}],
            "suggestion_prompts": [{"title": ["Admin's", ""], "content": "x"}],
        },
    }
    observed = InstanceState(models={row.id: observed_model(live)})
    plan = make_plan(InstanceState(models=desired), observed)
    assert plan.is_empty, plan.to_json()


def test_a_hand_edited_suggestion_or_tag_is_one_field_in_the_plan_and_reverted(tmp_path: Path) -> None:
    root = write_blueprint_dir(tmp_path, [blueprint("desk", suggestions=[CARD], tags=["Support"])])
    desired = rows(root)
    row = desired["aihub_agent_pipe.desk.default"]
    meta: dict = {"capabilities": {}}
    for path, value in row.fields.items():
        if path.startswith("meta.capabilities."):
            meta["capabilities"][path.removeprefix("meta.capabilities.")] = value
        elif path.startswith("meta."):
            meta[path.removeprefix("meta.")] = value
    meta["tags"] = [{"name": "Other"}]
    live = {
        "id": row.id,
        "name": row.fields["name"],
        "base_model_id": None,
        "is_active": True,
        "params": {},
        "meta": meta,
        "access_grants": row.fields["access_grants"],
    }
    plan = make_plan(InstanceState(models=desired), InstanceState(models={row.id: observed_model(live)}))
    (change,) = plan.changes
    assert [f.path for f in change.fields] == ["meta.tags"] and change.body is not None
    assert change.body["meta"]["tags"] == [{"name": "Support"}]
    assert change.body["meta"]["suggestion_prompts"] == row.fields["meta.suggestion_prompts"]


def test_every_sample_agent_has_its_own_icon_suggestions_and_tags() -> None:
    models = rows(REPO / "blueprints")
    assert sorted(models) == list(SAMPLE_MODEL_IDS)
    icons = set()
    for row in models.values():
        assert row.fields["meta.profile_image_url"].startswith("data:image/png;base64,"), row.id
        assert len(row.fields["meta.suggestion_prompts"]) >= 2, row.id
        assert row.fields["meta.tags"], row.id
        icons.add(row.fields["meta.profile_image_url"])
    assert len(icons) == 5  # one per blueprint, and the billing desk's own
    billing = models["aihub_agent_pipe.support-desk.billing"].fields
    assert all(
        "refund" in s["content"].lower() or "invoice" in s["content"].lower()
        for s in billing["meta.suggestion_prompts"]
    )
