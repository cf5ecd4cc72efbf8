"""Native features (web search, image generation, code interpreter) reach agents through the
bundle's own toggle filters, on every instance configuration (issue 8 point 1)."""

from __future__ import annotations

import base64
from pathlib import Path

from provisioner.features import NATIVE_FEATURES, NATIVE_TOGGLES
from provisioner.loader import load_catalog
from provisioner.toggle_filters import expected_toggle_files, rendered_toggle_functions
from tests.support.builders import REPO, blueprint, write_blueprint_dir
from tests.support.loading import load_source

MODEL = {"info": {"meta": {"aihub": {"managed_by": "aihub-provision", "features": ["web_search"]}}}}


def _load_filter(source: str):
    return load_source(source, "toggle", keep=False).Filter()


def test_every_native_feature_has_open_webuis_own_label_and_an_svg_icon() -> None:
    assert set(NATIVE_TOGGLES) == set(NATIVE_FEATURES)
    assert [NATIVE_TOGGLES[f].title for f in ("web_search", "image_generation", "code_interpreter")] == [
        "Web Search",
        "Image",
        "Code Interpreter",
    ]
    for toggle in NATIVE_TOGGLES.values():
        prefix = "data:image/svg+xml;base64,"
        assert toggle.icon.startswith(prefix)
        assert base64.b64decode(toggle.icon[len(prefix) :]).decode().startswith("<svg")


def test_a_toggle_filter_is_rendered_for_each_native_feature_a_blueprint_supports(tmp_path: Path) -> None:
    root = write_blueprint_dir(
        tmp_path / "bp", [blueprint("a", calls=["web_research"]), blueprint("b", calls=["summarise"])]
    )
    files = expected_toggle_files(load_catalog(root))
    assert sorted(files) == [
        "aihub_toggle_user_files.py",
        "aihub_toggle_web_search.py",
    ]  # no code_interpreter: no caller


def test_the_native_toggle_filter_looks_native_and_requests_its_feature(tmp_path: Path) -> None:
    root = write_blueprint_dir(tmp_path / "bp", [blueprint("a", calls=["web_research"])])
    fn = next(f for f in rendered_toggle_functions(load_catalog(root)) if f.id == "aihub_toggle_web_search")
    assert (fn.name, fn.description, fn.kind, fn.is_global) == ("Web Search", "Search the internet", "filter", False)
    instance = _load_filter(fn.content)
    assert instance.toggle is True and instance.icon == NATIVE_TOGGLES["web_search"].icon
    body: dict = {"metadata": {"aihub_requested_features": ["user_files"]}}
    instance.inlet(body, __metadata__=body["metadata"], __model__=MODEL)
    assert body["metadata"]["aihub_requested_features"] == ["user_files", "web_search"]


def test_the_native_toggle_adds_nothing_for_a_model_without_the_feature(tmp_path: Path) -> None:
    root = write_blueprint_dir(tmp_path / "bp", [blueprint("a", calls=["web_research"])])
    fn = next(f for f in rendered_toggle_functions(load_catalog(root)) if f.id == "aihub_toggle_web_search")
    body: dict = {"metadata": {}}
    other = {"info": {"meta": {"aihub": {"managed_by": "aihub-provision", "features": ["user_files"]}}}}
    _load_filter(fn.content).inlet(body, __metadata__=body["metadata"], __model__=other)
    assert body["metadata"] == {}


def test_the_samples_render_toggles_for_their_native_features() -> None:
    files = expected_toggle_files(load_catalog(REPO / "blueprints"))
    native = {"aihub_toggle_web_search.py", "aihub_toggle_code_interpreter.py", "aihub_toggle_image_generation.py"}
    assert native <= set(files)  # the Research Assistant's steps call all three
