"""The feature filter, loaded from its file and called the way Open WebUI 0.12.4 calls it."""

from __future__ import annotations

import copy
import inspect
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provisioner.function_files import extract_frontmatter  # mirrors Open WebUI 0.12.4
from tests.support.filter_support import SOURCE, call_like_openwebui, ff

KEY = "aihub_requested_features"
STRIPPED = ("web_search", "image_generation", "code_interpreter", "memory")


def our_model(features: Any = ("user_files", "web_search")) -> dict:
    """A registry entry of a model row the provisioner owns (marker in info.meta.aihub)."""
    marker: dict[str, Any] = {"managed_by": "aihub-provision", "blueprint": "demo", "agent": "agent"}
    marker["features"] = list(features) if isinstance(features, tuple) else features
    return {"id": "aihub_agent_pipe.demo.agent", "info": {"meta": {"aihub": marker}}}


def plain_model() -> dict:
    return {"id": "gpt-x", "info": {"meta": {"capabilities": {"web_search": True}}}}


def request(features: Any) -> tuple[dict, dict]:
    """Body and metadata as main.py:chat_completion builds them (one shared features dict)."""
    metadata = {"features": features, "filter_ids": [], "chat_id": "", "model": {}}
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": False}
    if features is not None:
        body["features"] = features
    body["metadata"] = metadata
    return body, metadata


def run(features: Any, model: Any) -> tuple[Any, dict]:
    body, metadata = request(features)
    returned = call_like_openwebui(ff.Filter().inlet, body, metadata=metadata, model=model)
    return returned, metadata


# --- shape of the file -------------------------------------------------------------------------


def test_frontmatter_is_on_line_one_and_says_not_global():
    assert SOURCE.splitlines()[0] == '"""'
    front = extract_frontmatter(SOURCE)
    assert front["global"] == "false"
    assert {"title", "author", "version", "description"} <= front.keys()


def test_open_webui_sees_a_non_toggle_filter_with_priority_zero():
    assert not hasattr(ff, "Pipe")
    instance = ff.Filter()
    assert not getattr(instance, "toggle", False)
    assert instance.Valves().priority == 0
    assert ff.METADATA_KEY == KEY


def test_inlet_declares_only_parameters_open_webui_can_inject():
    params = inspect.signature(ff.Filter().inlet).parameters
    assert "__features__" not in params  # not in the inlet pool: every chat would fail with 400
    injectable = {
        "body",
        "__metadata__",
        "__model__",
        "__user__",
        "__request__",
        "__id__",
        "__event_emitter__",
        "__event_call__",
        "__oauth_token__",
        "__chat_id__",
        "__message_id__",
    }
    assert set(params) <= injectable


# --- our models --------------------------------------------------------------------------------


def test_strips_all_four_toggles_in_place_and_keeps_the_shared_dict():
    features = {
        "web_search": True,
        "image_generation": True,
        "code_interpreter": True,
        "memory": True,
        "voice": True,
    }
    body, metadata = request(features)
    returned = call_like_openwebui(ff.Filter().inlet, body, metadata=metadata, model=our_model())
    assert returned is body
    assert body["features"] is features
    assert metadata["features"] is body["features"]
    assert {name: features[name] for name in STRIPPED} == dict.fromkeys(STRIPPED, False)
    assert features["voice"] is True  # not a toggle the agent decides; left to Open WebUI


@pytest.mark.parametrize(
    ("features", "supported", "granted"),
    [
        (
            {"web_search": True, "image_generation": True, "memory": True},
            ["user_files", "web_search"],
            ["web_search"],
        ),
        (
            {"web_search": True, "image_generation": True, "code_interpreter": True},
            ["web_search", "code_interpreter", "image_generation"],
            ["code_interpreter", "image_generation", "web_search"],
        ),
        ({"image_generation": True}, ["web_search"], []),
        (
            {"web_search": False, "image_generation": 0, "code_interpreter": None},
            ["web_search", "image_generation", "code_interpreter"],
            [],
        ),
        (
            {"web_search": 1, "image_generation": "yes"},
            ["web_search", "image_generation"],
            ["image_generation", "web_search"],
        ),
        ({}, ["web_search"], []),
        # Custom features come only from their toggle filter, never from `features`.
        ({"user_files": True, "web_search": True}, ["user_files", "web_search"], ["web_search"]),
        # memory and voice are not chat features, even if a marker listed them.
        ({"memory": True, "voice": True}, ["memory", "voice"], []),
        # A marker listing a feature twice or with junk still grants each feature once.
        (
            {"web_search": True},
            ["web_search", "web_search", 3, None, {"web_search": True}],
            ["web_search"],
        ),
    ],
    ids=[
        "intersection",
        "all-native",
        "unsupported",
        "falsy-values",
        "truthy-values",
        "empty",
        "custom-in-features",
        "memory-voice",
        "junk-marker",
    ],
)
def test_requests_only_supported_native_features(features, supported, granted):
    _, metadata = run(features, our_model(supported))
    assert metadata[KEY] == granted


def test_forged_metadata_value_is_replaced_by_a_fresh_list():
    body, metadata = request({"web_search": True})
    forged = ["image_generation", "deep_research"]
    metadata[KEY] = forged
    call_like_openwebui(
        ff.Filter().inlet,
        body,
        metadata=metadata,
        model=our_model(["web_search", "image_generation", "deep_research"]),
    )
    assert metadata[KEY] == ["web_search"]
    assert metadata[KEY] is not forged
    assert forged == ["image_generation", "deep_research"]  # the forged object itself untouched


def test_marker_features_as_a_string_is_not_read_as_a_substring_match():
    _, metadata = run({"web_search": True}, our_model("web_search"))
    assert metadata[KEY] == []


def test_metadata_given_separately_from_the_body_still_gets_the_key():
    features = {"web_search": True}
    body = {"features": features}
    metadata = {"features": features}
    call_like_openwebui(ff.Filter().inlet, body, metadata=metadata, model=our_model())
    assert metadata[KEY] == ["web_search"]
    assert features["web_search"] is False


# --- models we do not own ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "model",
    [
        plain_model(),
        None,
        {"id": "x"},
        {"info": None},
        {"info": {"meta": None}},
        {"info": {"meta": {"aihub": None}}},
        {"info": {"meta": {"aihub": "aihub-provision"}}},
        {"info": {"meta": {"aihub": {"managed_by": "someone-else", "features": ["web_search"]}}}},
        {"info": {"meta": {"aihub": {"features": ["web_search"]}}}},
        ["info"],
        "aihub_agent_pipe.demo.agent",
    ],
    ids=[
        "plain",
        "none",
        "no-info",
        "info-none",
        "meta-none",
        "marker-none",
        "marker-str",
        "other-owner",
        "no-owner",
        "list",
        "str",
    ],
)
def test_model_without_our_marker_keeps_body_and_metadata_untouched(model):
    features = {"web_search": True, "image_generation": True, "memory": True}
    body, metadata = request(features)
    metadata[KEY] = ["left", "alone"]
    before = copy.deepcopy((body, metadata))
    returned = call_like_openwebui(ff.Filter().inlet, body, metadata=metadata, model=model)
    assert returned is body
    assert (body, metadata) == before
    assert body["features"] is features


# --- odd shapes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "features",
    [None, [], ["web_search"], "web_search", 1, True, {"web_search": {"nested": True}}],
    ids=["none", "empty-list", "list", "str", "int", "bool", "nested-value"],
)
def test_odd_features_never_raise(features):
    body, metadata = request(features)
    returned = call_like_openwebui(ff.Filter().inlet, body, metadata=metadata, model=our_model())
    assert returned is body
    if isinstance(features, dict):
        assert metadata[KEY] == ["web_search"]  # a truthy value is a request, like Open WebUI reads it
    else:
        assert metadata[KEY] == []
        assert body.get("features") == features  # nothing to strip in a non-dict; left as sent


@pytest.mark.parametrize(
    ("body", "metadata"),
    [
        ({}, None),
        ({"features": {"web_search": True}}, None),
        ({"features": {"web_search": True}, "metadata": "x"}, "y"),
        ({"features": {"web_search": True}}, ["not", "a", "dict"]),
        (None, None),
        ("body", {}),
        ([], {"features": {"web_search": True}}),
    ],
    ids=[
        "empty-body",
        "no-metadata",
        "metadata-str",
        "metadata-list",
        "body-none",
        "body-str",
        "body-list",
    ],
)
def test_odd_bodies_and_metadata_never_raise_and_still_strip(body, metadata):
    returned = call_like_openwebui(ff.Filter().inlet, body, metadata=metadata, model=our_model())
    assert returned is body
    for features in (
        body.get("features") if isinstance(body, dict) else None,
        metadata.get("features") if isinstance(metadata, dict) else None,
    ):
        if isinstance(features, dict):
            assert features["web_search"] is False


@pytest.mark.parametrize(
    "marker_features",
    [None, "user_files,web_search", {"web_search": True}, 42, [None, 1.5, ["web_search"]]],
    ids=["none", "str", "dict", "int", "junk-list"],
)
def test_odd_marker_features_strip_and_request_nothing(marker_features):
    features = {"web_search": True, "memory": True}
    _, metadata = run(features, our_model(marker_features))
    assert metadata[KEY] == []
    assert features == {
        "web_search": False,
        "memory": False,
        "image_generation": False,
        "code_interpreter": False,
    }


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=20), children, max_size=4),
    max_leaves=12,
)
feature_names = st.sampled_from([*STRIPPED, "voice", "user_files", "deep_research"]) | st.text(max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    features=st.dictionaries(feature_names, json_values, max_size=6) | json_values,
    marker_features=st.lists(feature_names | json_values, max_size=6) | json_values,
    metadata=st.dictionaries(st.text(max_size=20), json_values, max_size=4) | json_values,
)
def test_never_raises_and_grants_only_supported_native_features(features, marker_features, metadata):
    body = {"messages": [], "features": features}
    if isinstance(metadata, dict):
        metadata["features"] = features
    model = our_model(marker_features)
    returned = call_like_openwebui(ff.Filter().inlet, body, metadata=metadata, model=model)
    assert returned is body
    if isinstance(features, dict):
        assert all(features[name] is False for name in STRIPPED)
    if isinstance(metadata, dict):
        granted = metadata[KEY]
        listed = marker_features if isinstance(marker_features, list) else []
        supported = {name for name in listed if isinstance(name, str)}
        assert granted == sorted(set(granted))
        assert set(granted) <= supported & {"web_search", "image_generation", "code_interpreter"}


# --- the helpers tests and the toggle filters rely on -------------------------------------------


def test_helpers_are_pure_functions_of_their_input():
    assert ff.requested_features({"web_search": True, "voice": True, "user_files": True}) == {"web_search"}
    assert ff.requested_features(["web_search"]) == frozenset()
    assert ff.supported_features(our_model(["a", "b"])) == {"a", "b"}
    assert ff.supported_features(plain_model()) == frozenset()
    features = {"web_search": True}
    ff.strip_native_toggles(features)
    assert features == dict.fromkeys(("web_search", "image_generation", "code_interpreter", "memory"), False)
    ff.strip_native_toggles("not a dict")  # no error
