"""Loading blueprint directories: derivation of features, and errors that name file, line, field."""

from __future__ import annotations

from pathlib import Path

import pytest

from provisioner.errors import BlueprintError
from provisioner.loader import load_catalog
from tests.support.builders import REPO, blueprint, write_blueprint_dir


def problems_of(root: Path) -> list[str]:
    with pytest.raises(BlueprintError) as info:
        load_catalog(root)
    return [str(p) for p in info.value.problems]


def test_sample_blueprints_load_and_derive_features() -> None:
    catalog = load_catalog(REPO / "blueprints")
    supported = {lb.blueprint.id: set(lb.supported_features) for lb in catalog.blueprints}
    assert supported == {
        "policy-faq": set(),
        "research-assistant": {"web_search", "code_interpreter", "image_generation"},
        "document-analyst": {"user_files"},
        "support-desk": {"web_search", "deep_research"},
    }
    assert sum(len(lb.blueprint.agents) for lb in catalog.blueprints) == 6


def test_support_is_exactly_what_the_steps_call(tmp_path: Path) -> None:
    root = write_blueprint_dir(
        tmp_path, [blueprint("a", calls=["summarise", "read_user_files"]), blueprint("b", calls=["web_research"])]
    )
    catalog = load_catalog(root)
    assert {lb.blueprint.id: lb.supported_features for lb in catalog.blueprints} == {
        "a": frozenset({"user_files"}),
        "b": frozenset({"web_search"}),
    }


def test_unknown_capability_names_file_line_and_field(tmp_path: Path) -> None:
    root = write_blueprint_dir(tmp_path, [blueprint("demo", calls=["summarise", "web_reserch"])])
    [problem] = problems_of(root)
    text = (root / "demo.yaml").read_text().splitlines()
    line = next(i for i, row in enumerate(text, 1) if "web_reserch" in row)
    assert problem.startswith(f"{root / 'demo.yaml'}:{line}: steps[0].calls[1]: unknown capability 'web_reserch'")
    assert "did you mean 'web_research'" in problem


def test_unknown_feature_in_serves_is_an_error(tmp_path: Path) -> None:
    caps = {"capabilities": {"summarise": {}, "x": {"serves": "web_serch"}}}
    root = write_blueprint_dir(tmp_path, capabilities=caps)
    [problem] = problems_of(root)
    assert "capabilities.yaml:" in problem and "capabilities.x.serves: unknown feature 'web_serch'" in problem


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    bad = blueprint(
        "demo", calls=["nope"], agents=[{"id": "a", "name": "A"}, {"id": "a", "name": "B", "defaults": ["web_search"]}]
    )
    root = write_blueprint_dir(tmp_path, [bad])
    problems = problems_of(root)
    assert any("unknown capability 'nope'" in p for p in problems)
    assert any("agents[1].id: duplicate agent id 'a'" in p for p in problems)
    assert any("agents[1].defaults[0]: 'web_search' is not a feature this blueprint supports" in p for p in problems)


def test_yaml_syntax_error_names_its_line(tmp_path: Path) -> None:
    root = write_blueprint_dir(tmp_path)
    (root / "broken.yaml").write_text("id: broken\nname: [unclosed\nsteps: []\n")
    [problem] = problems_of(root)
    assert problem.startswith(f"{root / 'broken.yaml'}:")
    assert "YAML syntax error" in problem


def test_wrong_type_names_the_field_path(tmp_path: Path) -> None:
    root = write_blueprint_dir(
        tmp_path, [blueprint("demo", agents=[{"id": "x", "name": "X", "access": {"groups": "Research"}}])]
    )
    [problem] = problems_of(root)
    assert "agents[0].access.groups: Input should be a valid list" in problem


def test_misspelled_field_suggests_the_right_one(tmp_path: Path) -> None:
    bp = blueprint("demo")
    bp["agnets"] = bp.pop("agents")
    root = write_blueprint_dir(tmp_path, [bp])
    problems = problems_of(root)
    assert any("agnets: unknown field (did you mean 'agents'?)" in p for p in problems)
    assert any(": agents: required field is missing" in p for p in problems)


def test_bad_access_value_gives_one_clear_error(tmp_path: Path) -> None:
    root = write_blueprint_dir(tmp_path, [blueprint("demo", agents=[{"id": "x", "name": "X", "access": "pubic"}])])
    [problem] = problems_of(root)
    assert "agents[0].access:" in problem and "'public' or 'private'" in problem


def test_ids_with_dots_are_rejected(tmp_path: Path) -> None:
    root = write_blueprint_dir(tmp_path, [blueprint("demo.v2")])
    [problem] = problems_of(root)
    assert "id: invalid value 'demo.v2'" in problem and "no dots" in problem


def test_duplicate_yaml_keys_are_reported(tmp_path: Path) -> None:
    root = write_blueprint_dir(tmp_path)
    (root / "demo.yaml").write_text((root / "demo.yaml").read_text() + "id: again\n")
    [problem] = problems_of(root)
    assert ": id: duplicate key" in problem


def test_duplicate_blueprint_ids_across_files(tmp_path: Path) -> None:
    root = write_blueprint_dir(tmp_path, [blueprint("demo")])
    (root / "copy.yaml").write_text((root / "demo.yaml").read_text())
    problems = problems_of(root)
    assert len(problems) == 2 and all("duplicate blueprint id 'demo'" in p for p in problems)


def test_empty_directory_is_an_error(tmp_path: Path) -> None:
    problems = problems_of(tmp_path)
    assert any("capabilities.yaml: missing" in p for p in problems)
    assert any("no blueprint files" in p for p in problems)


def test_missing_directory_is_an_error(tmp_path: Path) -> None:
    [problem] = problems_of(tmp_path / "nope")
    assert problem.endswith("directory not found")


def test_custom_feature_cannot_reuse_a_native_name(tmp_path: Path) -> None:
    root = write_blueprint_dir(tmp_path, features={"features": {"memory": {"title": "Memory"}}})
    assert any("'memory' is Open WebUI's own" in p for p in problems_of(root))


def test_capability_overrides_are_limited(tmp_path: Path) -> None:
    root = write_blueprint_dir(tmp_path, [blueprint("demo", openwebui_capabilities={"memory": True})])
    [problem] = problems_of(root)
    assert "openwebui_capabilities.memory: cannot set memory" in problem


def test_icon_that_is_not_an_image_is_rejected(tmp_path: Path) -> None:
    (tmp_path / "bp").mkdir()
    (tmp_path / "bp" / "logo.png").write_text("not really a png")
    root = write_blueprint_dir(tmp_path / "bp", [blueprint("demo", icon="logo.png")])
    [problem] = problems_of(root)
    assert "icon: icon is not an image" in problem


def test_svg_icon_is_rejected_for_models_but_fine_for_toggles(tmp_path: Path) -> None:
    svg = '<svg xmlns="http://www.w3.org/2000/svg"></svg>'
    (tmp_path / "i.svg").write_text(svg)
    features = {"features": {"user_files": {"title": "Files", "icon": "i.svg"}}}
    root = write_blueprint_dir(tmp_path, [blueprint("demo", icon="i.svg")], features=features)
    [problem] = problems_of(root)
    assert "demo.yaml" in problem and "image/svg+xml" in problem


def test_backend_url_with_credentials_is_refused(tmp_path: Path) -> None:
    bp = blueprint("demo")
    bp["backend"]["url"] = "https://agent:hunter2@agents.internal/demo"
    root = write_blueprint_dir(tmp_path, [bp])
    [problem] = problems_of(root)
    assert "backend.url:" in problem and "a user or password in the URL" in problem
    assert "hunter2" not in problem
