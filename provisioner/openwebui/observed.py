"""Open WebUI's JSON listings -> InstanceState, in the same flat shape as the desired state. Pure.

Layer: adapter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..grants import normalize_grants
from ..owui_capabilities import CAPABILITY_KEYS
from ..state import (
    FUNCTION_I18N_FIELDS,
    MARKER_KEY,
    MODEL_I18N_FIELDS,
    InstanceState,
    ObjectState,
    get_path,
    i18n_fields,
    is_managed,
    split_marker,
)
from .compat import Compat

MODEL_PATHS: tuple[str, ...] = (
    "name",
    "base_model_id",
    "is_active",
    "meta.description",
    "meta.profile_image_url",
    *(f"meta.capabilities.{key}" for key in CAPABILITY_KEYS),
    "meta.filterIds",
    "meta.actionIds",
    "meta.defaultFeatureIds",
    "meta.defaultFilterIds",
    "meta.suggestion_prompts",
    "meta.tags",
    f"meta.{MARKER_KEY}",
)
FUNCTION_PATHS: tuple[str, ...] = (
    "name",
    "meta.description",
    "content",
    "is_active",
    "is_global",
    f"meta.{MARKER_KEY}",
)


def observe(
    models: Iterable[Mapping[str, Any]], functions: Iterable[Mapping[str, Any]], compat: Compat | None = None
) -> InstanceState:
    """Index the listings by id, keeping each raw record for read-merge-write. `compat` says
    how the release stores access (default: the pinned release's `access_grants`)."""
    return InstanceState(
        functions={str(f["id"]): observed_function(f) for f in functions if "id" in f},
        models={str(m["id"]): observed_model(m, compat) for m in models if "id" in m},
    )


def observed_model(raw: Mapping[str, Any], compat: Compat | None = None) -> ObjectState:
    fields = {path: get_path(raw, path) for path in MODEL_PATHS}
    fields.update(i18n_fields(raw.get("meta"), MODEL_I18N_FIELDS))
    if fields["meta.actionIds"] is None:  # no key means no actions: rows from before need no write
        fields["meta.actionIds"] = []
    grants = compat.observed_grants(raw) if compat else raw.get("access_grants")
    fields["access_grants"] = normalize_grants(grants)
    fields[f"meta.{MARKER_KEY}"], version = split_marker(fields[f"meta.{MARKER_KEY}"])
    return ObjectState("model", str(raw["id"]), fields, is_managed(raw.get("meta")), raw, written_by=version)


def observed_function(raw: Mapping[str, Any]) -> ObjectState:
    fields = {path: get_path(raw, path) for path in FUNCTION_PATHS}
    fields.update(i18n_fields(raw.get("meta"), FUNCTION_I18N_FIELDS))
    valves = raw.get("valves")
    if isinstance(valves, Mapping):
        fields.update({f"valves.{key}": value for key, value in valves.items()})
    fields[f"meta.{MARKER_KEY}"], version = split_marker(fields[f"meta.{MARKER_KEY}"])
    return ObjectState("function", str(raw["id"]), fields, is_managed(raw.get("meta")), raw, written_by=version)
