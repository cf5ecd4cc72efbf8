"""
title: AI Hub Feature Filter
author: aihub-provision
version: 0.1.0
description: For AI Hub agents: strips Open WebUI's own toggles, requests only supported features.
global: false
"""

# Runs as an inlet filter attached (meta.filterIds) to every model row the provisioner owns.
# Open WebUI must run none of an agent's work itself, so for our models this filter turns every
# toggle Open WebUI would act on (web search, image generation, code interpreter, memory) off,
# and records what the user asked for under a metadata key that the agent pipe forwards to the
# agent. Toggle filters for custom features (priority 10) run after it and append to that list.
#
# Open WebUI facts this relies on (0.12.4):
# - `body["features"]` and `__metadata__["features"]` are the same dict object, and a pipe
#   reached from the UI still sees that original object: strip by mutating it, never rebind it.
# - An inlet cannot receive `__features__` (declaring it breaks every chat), so read `body`.
# - The pipe's `__metadata__` keeps keys an inlet added to `__metadata__`.

from typing import Any

from pydantic import BaseModel, Field

# The one metadata key the feature filter, the toggle filters and the agent pipe agree on.
METADATA_KEY = "aihub_requested_features"

# Ownership marker written by the provisioner: __model__["info"]["meta"][MARKER_KEY].
MARKER_KEY = "aihub"
MANAGED_BY = "aihub-provision"

# ChatFeatures with a native Open WebUI toggle: the only ones read from `body["features"]`.
# Custom features reach the metadata list only through their toggle filter; other keys of
# `features` (voice, memory, anything a client invents) never count as requests.
NATIVE_FEATURES = ("code_interpreter", "image_generation", "web_search")

# Every key of `features` that Open WebUI acts on after the inlets.
STRIPPED_TOGGLES = ("code_interpreter", "image_generation", "memory", "web_search")


def model_marker(model: Any) -> dict | None:
    """The provisioner's marker on a registry entry, or None when the model is not ours."""
    info = model.get("info") if isinstance(model, dict) else None
    meta = info.get("meta") if isinstance(info, dict) else None
    marker = meta.get(MARKER_KEY) if isinstance(meta, dict) else None
    if isinstance(marker, dict) and marker.get("managed_by") == MANAGED_BY:
        return marker
    return None


def supported_features(model: Any) -> frozenset:
    """Feature names the selected model's marker lists; empty for odd or unowned models."""
    return marker_features(model_marker(model))


def marker_features(marker: dict | None) -> frozenset:
    """The `features` list of a marker, as names; empty when it is missing or odd."""
    features = marker.get("features") if marker is not None else None
    if not isinstance(features, list):
        return frozenset()
    return frozenset(name for name in features if isinstance(name, str))


def requested_features(features: Any) -> frozenset:
    """Native features switched on in a request's `features` (truthy, as Open WebUI reads them)."""
    if not isinstance(features, dict):
        return frozenset()
    return frozenset(name for name in NATIVE_FEATURES if features.get(name))


def strip_native_toggles(features: Any) -> None:
    """Switch off, in place, every toggle Open WebUI would act on; no-op for a non-dict."""
    if isinstance(features, dict):
        for name in STRIPPED_TOGGLES:
            features[name] = False


def metadata_dicts(body: Any, metadata: Any) -> list:
    """The distinct metadata dicts of a request (`__metadata__` is normally `body["metadata"]`)."""
    candidates = [metadata, body.get("metadata") if isinstance(body, dict) else None]
    found: list = []
    for candidate in candidates:
        if isinstance(candidate, dict) and not any(candidate is seen for seen in found):
            found.append(candidate)
    return found


def feature_dicts(body: Any, metadatas: list) -> list:
    """The distinct `features` dicts of a request: the body's and any the metadata holds."""
    candidates = [body.get("features") if isinstance(body, dict) else None]
    candidates += [metadata.get("features") for metadata in metadatas]
    found: list = []
    for candidate in candidates:
        if isinstance(candidate, dict) and not any(candidate is seen for seen in found):
            found.append(candidate)
    return found


class Filter:
    class Valves(BaseModel):
        priority: int = Field(
            default=0,
            description="Run order among filters (ascending); toggle filters use 10 to run later.",
        )

    def __init__(self) -> None:
        self.valves = self.Valves()

    def inlet(
        self,
        body: dict,
        __metadata__: dict | None = None,
        __model__: dict | None = None,
    ) -> dict:
        """Strip Open WebUI's toggles for our models and record the supported requests."""
        marker = model_marker(__model__)
        if marker is None:
            return body  # not one of our agents: Open WebUI's built-ins stay as they are

        metadatas = metadata_dicts(body, __metadata__)
        requested: frozenset = frozenset()
        for features in feature_dicts(body, metadatas):
            requested |= requested_features(features)
            strip_native_toggles(features)

        granted = sorted(requested & marker_features(marker))
        for metadata in metadatas:
            # A fresh list every time: whatever a client put under the key is discarded.
            metadata[METADATA_KEY] = list(granted)
        return body
