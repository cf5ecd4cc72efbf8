"""Desired state: one row per agent, explicit capabilities, filters per supported feature."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from provisioner.desired import build_desired, model_id
from provisioner.errors import BlueprintError
from provisioner.function_files import load_function_files
from provisioner.loader import load_catalog
from provisioner.owui_capabilities import CAPABILITY_KEYS
from tests.support.builders import REPO, blueprint, write_blueprint_dir


@pytest.fixture(scope="module")
def samples():
    catalog = load_catalog(REPO / "blueprints")
    return build_desired(catalog, load_function_files(REPO / "owui_functions"), groups={})


def caps(row) -> dict[str, bool]:
    return {
        k.removeprefix("meta.capabilities."): v for k, v in row.fields.items() if k.startswith("meta.capabilities.")
    }


def test_one_row_per_agent_with_pipe_sub_model_ids(samples) -> None:
    assert sorted(samples.models) == sorted(
        model_id(bp, agent)
        for bp, agent in [
            ("policy-faq", "default"),
            ("research-assistant", "default"),
            ("document-analyst", "default"),
            ("support-desk", "tier1"),
            ("support-desk", "tier2"),
            ("support-desk", "billing"),
        ]
    )
    assert all(row.fields["base_model_id"] is None for row in samples.models.values())


def test_every_capability_key_is_written_explicitly(samples) -> None:
    for row in samples.models.values():
        assert list(caps(row)) == list(CAPABILITY_KEYS)
        assert all(isinstance(v, bool) for v in caps(row).values())


def test_open_webuis_own_feature_toggles_are_off_on_every_agent_row(samples) -> None:
    # Open WebUI must neither show its own toggle nor run its own search, image generation or
    # code interpreter for an agent: the bundle's toggle filters carry those features instead.
    for row in samples.models.values():
        c = caps(row)
        assert (c["web_search"], c["code_interpreter"], c["image_generation"]) == (False, False, False)
        assert row.fields["meta.defaultFeatureIds"] == []


def test_agent_work_stays_out_of_open_webui(samples) -> None:
    for row in samples.models.values():
        c = caps(row)
        assert (c["memory"], c["builtin_tools"], c["terminal"]) == (False, False, False)
        assert "meta.toolIds" not in row.fields


def test_what_a_blueprints_capabilities_read_switches_its_inputs_on(samples) -> None:
    analyst = caps(samples.models["aihub_agent_pipe.document-analyst.default"])
    assert (analyst["file_upload"], analyst["file_context"], analyst["vision"]) == (True, False, False)
    research = caps(samples.models["aihub_agent_pipe.research-assistant.default"])
    assert (research["file_upload"], research["vision"]) == (False, True)
    faq = caps(samples.models["aihub_agent_pipe.policy-faq.default"])
    assert (faq["file_upload"], faq["vision"]) == (False, False)


def test_filter_ids_are_feature_filter_plus_one_toggle_per_supported_feature(samples) -> None:
    assert samples.models["aihub_agent_pipe.policy-faq.default"].fields["meta.filterIds"] == ["aihub_feature_filter"]
    assert samples.models["aihub_agent_pipe.support-desk.tier1"].fields["meta.filterIds"] == [
        "aihub_feature_filter",
        "aihub_toggle_deep_research",
        "aihub_toggle_web_search",
    ]
    assert samples.models["aihub_agent_pipe.research-assistant.default"].fields["meta.filterIds"] == [
        "aihub_feature_filter",
        "aihub_toggle_code_interpreter",
        "aihub_toggle_image_generation",
        "aihub_toggle_web_search",
    ]


def test_default_toggles_are_the_bundles_toggle_filters(samples) -> None:
    tier2 = samples.models["aihub_agent_pipe.support-desk.tier2"].fields
    assert tier2["meta.defaultFeatureIds"] == []
    assert tier2["meta.defaultFilterIds"] == ["aihub_toggle_web_search", "aihub_toggle_deep_research"]


def test_marker_lists_supported_features(samples) -> None:
    marker = samples.models["aihub_agent_pipe.document-analyst.default"].fields["meta.aihub"]
    assert marker == {
        "managed_by": "aihub-provision",
        "blueprint": "document-analyst",
        "agent": "default",
        "features": ["user_files"],
    }


def test_functions_follow_their_frontmatter(samples) -> None:
    fn = samples.functions["aihub_feature_filter"].fields
    assert fn["is_active"] is True and fn["is_global"] is False
    assert fn["content"] == (REPO / "owui_functions" / "aihub_feature_filter.py").read_text()


def test_access_public_private_and_groups(tmp_path: Path) -> None:
    agents: list[dict[str, Any]] = [
        {"id": "pub", "name": "P", "access": "public"},
        {"id": "priv", "name": "Q", "access": "private"},
        {"id": "grp", "name": "R", "access": {"groups": ["Legal", "Research"]}},
    ]
    catalog = load_catalog(write_blueprint_dir(tmp_path, [blueprint("demo", agents=agents)]))
    state = build_desired(catalog, (), groups={"Legal": "g-1", "Research": "g-2", "Other": "g-3"})
    grants = {i.rsplit(".", 1)[1]: row.fields["access_grants"] for i, row in state.models.items()}
    assert grants["pub"] == [{"principal_type": "user", "principal_id": "*", "permission": "read"}]
    assert grants["priv"] == []
    assert [g["principal_id"] for g in grants["grp"]] == ["g-1", "g-2"]


def test_missing_group_is_an_error_naming_file_line_and_field(tmp_path: Path) -> None:
    agents = [{"id": "grp", "name": "R", "access": {"groups": ["Legal", "Reserch"]}}]
    root = write_blueprint_dir(tmp_path, [blueprint("demo", agents=agents)])
    with pytest.raises(BlueprintError) as info:
        build_desired(load_catalog(root), (), groups={"Legal": "g-1", "Research": "g-2"})
    [problem] = info.value.problems
    assert problem.file.endswith("demo.yaml") and problem.line is not None
    assert problem.field == "agents[0].access.groups[1]"
    assert "no group named 'Reserch'" in problem.message
