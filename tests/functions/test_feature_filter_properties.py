"""Properties of the feature filter and a rendered toggle filter, over any JSON-ish request.

test_feature_filter.py pins the cases; here hypothesis varies every level of the request and the
model (body, `features`, `metadata`, `__metadata__`, `__model__`, wrong types anywhere) and checks
what must hold for all of them:

- the hook never raises and returns the very body it was given;
- every `features` dict stays the same object where it was (Open WebUI shares it with the pipe's
  metadata, so a rebound dict would let the pipe see the unstripped one);
- a model without our marker leaves the request exactly as it was;
- for our models, the requested-features list holds only features the model supports;
- a second run changes nothing more (for the feature filter: the grant never widens; the first
  run consumed the request by switching the toggles off, so a rerun finds nothing to grant).
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provisioner.toggle_filters import render_toggle_filter
from tests.support.filter_support import call_like_openwebui, ff
from tests.support.loading import load_source

KEY = "aihub_requested_features"
NATIVE = {"web_search", "image_generation", "code_interpreter"}
STRIPPED = ("web_search", "image_generation", "code_interpreter", "memory")
toggle = load_source(
    render_toggle_filter(feature="user_files", title="My files", description="d", icon=None), "toggle_props", keep=False
)
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- strategies --------------------------------------------------------------------------------

names = st.sampled_from([*STRIPPED, "voice", "user_files", "deep_research", KEY, "aihub", "features"]) | st.text(
    max_size=8
)
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
json_values = st.recursive(
    scalars | names,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(names, children, max_size=4),
    max_leaves=10,
)
feature_dicts = st.dictionaries(names, json_values, max_size=6)


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly the well-typed value, otherwise anything else JSON can carry."""
    return st.integers(0, 4).flatmap(lambda i: json_values if i == 0 else strategy)


# A registry entry: our marker, or a wrong type or a wrong value at any level.
markers = st.fixed_dictionaries(
    {"managed_by": maybe(st.just("aihub-provision"))},
    optional={"features": maybe(st.lists(names | json_values, max_size=6)), "blueprint": json_values},
)
models = maybe(
    st.fixed_dictionaries(
        {"info": maybe(st.fixed_dictionaries({"meta": maybe(st.fixed_dictionaries({"aihub": maybe(markers)}))}))},
        optional={"id": json_values},
    )
)


@st.composite
def requests(draw: st.DrawFn) -> tuple[Any, Any]:
    """(body, __metadata__) shaped like main.py builds them, and every way they can be odd."""
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values), draw(json_values | st.none())
    features = draw(maybe(feature_dicts))
    metadata = draw(maybe(st.dictionaries(names, json_values, max_size=4)))
    if isinstance(metadata, dict):
        # usually the very features object of the body, sometimes its own, sometimes none
        choice = draw(st.sampled_from(["shared", "own", "none"]))
        if choice == "shared":
            metadata["features"] = features
        elif choice == "own":
            metadata["features"] = draw(maybe(feature_dicts))
        if draw(st.booleans()):
            metadata[KEY] = draw(maybe(st.lists(names, max_size=4)))  # forged or left over
    body: dict[str, Any] = draw(st.dictionaries(names, json_values, max_size=3))
    if draw(st.booleans()):
        body["features"] = features
    body["metadata"] = metadata
    passed = draw(st.sampled_from(["same", "copy", "other"]))
    if passed == "same":
        return body, metadata
    if passed == "copy" and isinstance(metadata, dict):
        return body, dict(metadata)  # a distinct dict holding the same features object
    return body, draw(json_values | st.none())


# --- helpers -----------------------------------------------------------------------------------


def supported(model: Any) -> set[str] | None:
    """What the model's marker lists, or None when the model is not ours."""
    try:
        marker = model["info"]["meta"]["aihub"]
    except (KeyError, TypeError, IndexError):
        return None
    if not isinstance(marker, dict) or marker.get("managed_by") != "aihub-provision":
        return None
    listed = marker.get("features")
    return {n for n in listed if isinstance(n, str)} if isinstance(listed, list) else set()


def places(body: Any, metadata: Any) -> list[tuple[Any, str, Any]]:
    """(container, key, value) for each `features` and metadata slot the hooks may touch."""
    found = []
    for container in (body, metadata, body.get("metadata") if isinstance(body, dict) else None):
        if isinstance(container, dict):
            for key in ("features", "metadata"):
                if key in container:
                    found.append((container, key, container[key]))
    return found


def metadata_dicts(body: Any, metadata: Any) -> list[dict]:
    """The distinct metadata dicts of a request, in a stable order."""
    found: list[dict] = []
    for m in (metadata, body.get("metadata") if isinstance(body, dict) else None):
        if isinstance(m, dict) and not any(m is seen for seen in found):
            found.append(m)
    return found


def run(hook: Any, body: Any, metadata: Any, model: Any) -> None:
    before = places(body, metadata)
    returned = call_like_openwebui(hook, body, metadata=metadata, model=model)
    assert returned is body
    for container, key, value in before:
        assert container[key] is value  # nothing rebound, features dicts included


def snapshot(body: Any, metadata: Any) -> Any:
    return copy.deepcopy((body, metadata))


# --- the feature filter ------------------------------------------------------------------------


@SETTINGS
@given(request=requests(), model=models)
def test_feature_filter_never_raises_never_rebinds_and_grants_only_supported_natives(request, model) -> None:
    body, metadata = request
    before = snapshot(body, metadata)
    run(ff.Filter().inlet, body, metadata, model)
    allowed = supported(model)
    if allowed is None:
        assert snapshot(body, metadata) == before  # not ours: untouched
        return
    for features in (p[2] for p in places(body, metadata) if p[1] == "features"):
        if isinstance(features, dict):
            assert all(features[name] is False for name in STRIPPED)
    for meta in metadata_dicts(body, metadata):
        granted = meta[KEY]
        assert isinstance(granted, list) and granted == sorted(set(granted))
        assert set(granted) <= allowed & NATIVE


@SETTINGS
@given(request=requests(), model=models)
def test_feature_filter_run_twice_changes_nothing_more_and_never_widens_the_grant(request, model) -> None:
    body, metadata = request
    run(ff.Filter().inlet, body, metadata, model)
    once = snapshot(body, metadata)
    run(ff.Filter().inlet, body, metadata, model)
    if supported(model) is None:
        assert snapshot(body, metadata) == once
        return
    # The first run consumed the request (toggles off), so a rerun may only grant less.
    for first, second in zip(metadata_dicts(*once), metadata_dicts(body, metadata), strict=True):
        assert set(second.pop(KEY)) <= set(first.pop(KEY))
    assert snapshot(body, metadata) == once  # and apart from the grant it changed nothing


# --- a rendered toggle filter ------------------------------------------------------------------


@SETTINGS
@given(request=requests(), model=models)
def test_toggle_filter_never_raises_never_rebinds_and_adds_only_its_supported_feature(request, model) -> None:
    body, metadata = request
    before = snapshot(body, metadata)
    lists_before = [copy.deepcopy(m.get(KEY)) for m in metadata_dicts(body, metadata)]
    run(toggle.Filter().inlet, body, metadata, model)
    allowed = supported(model)
    if allowed is None or "user_files" not in allowed:
        assert snapshot(body, metadata) == before
        return
    for meta, old in zip(metadata_dicts(body, metadata), lists_before, strict=True):
        new = meta[KEY]
        kept = old if isinstance(old, list) else []
        assert isinstance(new, list) and new.count("user_files") == max(1, kept.count("user_files"))
        assert [n for n in new if n != "user_files"] == [n for n in kept if n != "user_files"]


@SETTINGS
@given(request=requests(), model=models)
def test_toggle_filter_is_idempotent(request, model) -> None:
    body, metadata = request
    run(toggle.Filter().inlet, body, metadata, model)
    once = snapshot(body, metadata)
    run(toggle.Filter().inlet, body, metadata, model)
    assert snapshot(body, metadata) == once


@SETTINGS
@given(request=requests(), model=models)
def test_feature_filter_then_toggle_filter_request_only_supported_features(request, model) -> None:
    """The order Open WebUI runs them in (priority 0, then 10): whatever came in, only supported goes out."""
    body, metadata = request
    for _ in range(2):
        for hook in (ff.Filter().inlet, toggle.Filter().inlet):
            run(hook, body, metadata, model)
        allowed = supported(model)
        if allowed is None:
            continue
        for meta in metadata_dicts(body, metadata):
            assert set(meta[KEY]) <= allowed
            assert len(meta[KEY]) == len(set(meta[KEY]))
