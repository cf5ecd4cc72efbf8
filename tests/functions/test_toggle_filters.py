"""Rendered toggle filters: valid, deterministic Python that Open WebUI loads as a toggle."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provisioner.function_files import extract_frontmatter  # mirrors Open WebUI 0.12.4
from provisioner.toggle_filters import (
    TOGGLE_FILTER_PREFIX,
    render_toggle_filter,
    toggle_filter_filename,
    toggle_filter_id,
)
from tests.support.builders import FEATURE_FILTER
from tests.support.loading import load_file, load_source

KEY = "aihub_requested_features"
ICON = "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciLz4="


def render(
    feature: str = "user_files",
    *,
    title: str = "Your files",
    description: str = "Let the agent read the files you uploaded.",
    icon: str | None = ICON,
) -> str:
    return render_toggle_filter(feature=feature, title=title, description=description, icon=icon)


def call_inlet(instance: Any, body: Any, *, metadata: Any, model: Any) -> Any:
    """Inject only declared parameters, as `utils/filter.py:get_filter_params` does."""
    pool = {
        "__metadata__": metadata,
        "__model__": model,
        "__user__": {"id": "u1"},
        "__request__": None,
        "__id__": "aihub_toggle_user_files",
    }
    sig = inspect.signature(instance.inlet)
    result = instance.inlet(**({"body": body} | {k: v for k, v in pool.items() if k in sig.parameters}))
    return asyncio.run(result) if inspect.iscoroutine(result) else result


def our_model(features: Any = ("user_files", "web_search")) -> dict:
    marker: dict[str, Any] = {"managed_by": "aihub-provision", "blueprint": "demo", "agent": "agent"}
    marker["features"] = list(features) if isinstance(features, tuple) else features
    return {"id": "aihub_agent_pipe.demo.agent", "info": {"meta": {"aihub": marker}}}


toggle = load_source(render(), "toggle_under_test", keep=False)


# --- ids and names -----------------------------------------------------------------------------


def test_id_and_filename_follow_the_contract():
    assert TOGGLE_FILTER_PREFIX == "aihub_toggle_"
    assert toggle_filter_id("user_files") == "aihub_toggle_user_files"
    assert toggle_filter_filename("user_files") == "aihub_toggle_user_files.py"
    assert toggle_filter_id("deep_research2").isidentifier()


@pytest.mark.parametrize("feature", ["", "User", "1st", "a-b", "a b", "a.b", "é", "x\n", "__x"])
def test_names_that_cannot_be_a_function_id_are_refused(feature):
    with pytest.raises(ValueError, match="cannot name a toggle filter"):
        toggle_filter_id(feature)
    with pytest.raises(ValueError):
        render(feature)


# --- what Open WebUI sees ----------------------------------------------------------------------


def test_rendered_filter_is_a_toggle_with_its_icon_and_priority_10():
    assert not hasattr(toggle, "Pipe")  # Open WebUI picks Pipe before Filter
    instance = toggle.Filter()
    assert instance.toggle is True
    assert instance.icon == ICON
    assert instance.Valves().priority == 10
    assert toggle.FEATURE == "user_files"
    assert toggle.METADATA_KEY == KEY


def test_frontmatter_parses_like_open_webui_and_says_not_global():
    source = render()
    assert source.splitlines()[0] == '"""'
    front = extract_frontmatter(source)
    assert front["title"] == "Your files"
    assert front["description"] == "Let the agent read the files you uploaded."
    assert front["global"] == "false"
    assert "icon_url" not in front  # would override self.icon and bloat meta.manifest


def test_first_comment_says_generated_and_not_to_edit():
    first_comment = next(line for line in render().splitlines() if line.startswith("#"))
    assert "provision generate" in first_comment
    assert "do not edit" in first_comment


def test_inlet_declares_no_features_parameter():
    assert "__features__" not in inspect.signature(toggle.Filter().inlet).parameters


# --- inlet behaviour ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "model", "after"),
    [
        (None, our_model(), ["user_files"]),
        ([], our_model(), ["user_files"]),
        (["web_search"], our_model(), ["web_search", "user_files"]),
        (["user_files"], our_model(), ["user_files"]),
        (["web_search", "user_files"], our_model(), ["web_search", "user_files"]),
        ("user_files", our_model(), ["user_files"]),
        ({"user_files": True}, our_model(), ["user_files"]),
        (["web_search"], our_model(["web_search"]), ["web_search"]),
        (None, our_model(["web_search"]), None),
        (None, our_model("user_files"), None),
        (None, our_model(None), None),
        (None, {"info": {"meta": {"aihub": {"features": ["user_files"]}}}}, None),
        (None, {"info": {"meta": {"capabilities": {}}}}, None),
        (None, None, None),
    ],
    ids=[
        "absent",
        "empty",
        "append",
        "already-there",
        "already-there-2",
        "str",
        "dict",
        "unsupported",
        "unsupported-absent",
        "marker-str",
        "marker-none",
        "no-owner",
        "plain",
        "model-none",
    ],
)
def test_inlet_adds_its_feature_once_and_only_when_supported(before, model, after):
    metadata: dict = {"features": {}}
    if before is not None:
        metadata[KEY] = before
    body = {"messages": [], "metadata": metadata}
    returned = call_inlet(toggle.Filter(), body, metadata=metadata, model=model)
    assert returned is body
    assert metadata.get(KEY) == after


@pytest.mark.parametrize(
    ("body", "metadata"),
    [
        (None, None),
        ({}, None),
        ("x", "y"),
        ([], []),
        ({"metadata": 3}, None),
        ({"metadata": {}}, None),
    ],
    ids=["none", "no-metadata", "strings", "lists", "metadata-int", "metadata-in-body-only"],
)
def test_inlet_never_raises_on_odd_input(body, metadata):
    returned = call_inlet(toggle.Filter(), body, metadata=metadata, model=our_model())
    assert returned is body
    if isinstance(body, dict) and isinstance(body.get("metadata"), dict):
        assert body["metadata"][KEY] == ["user_files"]


def test_runs_after_the_feature_filter_and_extends_its_list():
    """Open WebUI runs inlets by (priority, id): feature filter (0) first, then the toggle (10)."""
    feature_filter = load_file(FEATURE_FILTER, "ff_for_toggle_test", keep=False)
    assert feature_filter.Filter().Valves().priority < toggle.Filter().Valves().priority

    features = {"web_search": True, "image_generation": True, "memory": True}
    metadata = {"features": features, KEY: ["image_generation"]}  # forged by a client
    body = {"messages": [], "features": features, "metadata": metadata}
    model = our_model(["user_files", "web_search"])
    for instance in (feature_filter.Filter(), toggle.Filter()):
        body = call_inlet(instance, body, metadata=metadata, model=model)
    assert metadata[KEY] == ["web_search", "user_files"]
    assert body["features"] is features and features["web_search"] is False


# --- the rendered text -------------------------------------------------------------------------


def test_rendering_is_deterministic_and_depends_on_every_input():
    assert render() == render()
    variants = {
        render(),
        render("deep_research"),
        render(title="Other"),
        render(description="Other"),
        render(icon="https://example.invalid/i.png"),
        render(icon=None),
    }
    assert len(variants) == 6


def test_literals_use_double_quotes_so_a_formatter_leaves_the_file_alone():
    source = render(icon="data:image/svg+xml;utf8,<svg a='1' b='2' c=\"3\"/>")
    assert 'METADATA_KEY = "aihub_requested_features"' in source
    assert 'FEATURE = "user_files"' in source
    assert "self.icon = \"data:image/svg+xml;utf8,<svg a='1' b='2' c=\\\"3\\\"/>\"" in source


NASTY = [
    'Say "hi"',
    "It's",
    'Triple """ quotes',
    "Triple ''' quotes",
    '"""',
    'ends with "',
    "back\\slash \\N{BULLET} \\u00e9 \\x41 \\",
    "two\nlines\r\nand\ttabs",
    "unicode\u2028line\x85sep\x0cff",
    "nul\x00byte",
    "$title ${feature} {braces} %s",
    "title: injected\nglobal: true",
    "🙂 émoji",
]


@pytest.mark.parametrize("text", NASTY)
def test_nasty_titles_and_descriptions_still_render_valid_python(text):
    source = render(title=text, description=text, icon=text)
    module = load_source(source, "toggle_under_test", keep=False)
    assert module.Filter().icon == text  # icons go through repr(): any string survives exactly
    assert module.FEATURE == "user_files"
    front = extract_frontmatter(source)
    assert front["global"] == "false"  # nothing in the text ended or hijacked the frontmatter
    printable = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    doc_lines = (module.__doc__ or "").splitlines()
    assert f"title: {printable}" in doc_lines
    assert f"description: {printable}" in doc_lines


@settings(max_examples=200, deadline=None)
@given(
    title=st.text(max_size=80),
    description=st.text(max_size=200),
    icon=st.none() | st.text(max_size=200),
)
def test_any_text_renders_loadable_python_with_intact_frontmatter(title, description, icon):
    source = render(title=title, description=description, icon=icon)
    module = load_source(source, "toggle_under_test", keep=False)
    assert module.Filter().icon == icon
    front = extract_frontmatter(source)
    assert front["global"] == "false"
    assert set(front) == {"title", "author", "version", "description", "global"}
