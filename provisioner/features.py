"""The ChatFeature vocabulary: which features Open WebUI has a native toggle for.

Any other feature name is *custom*: Open WebUI has no toggle for it, so the bundle ships one
toggle filter per custom feature (see toggle_filters.py).
"""

from __future__ import annotations

# Features with a native chat toggle; their capability key in meta.capabilities has the same name.
NATIVE_FEATURES: frozenset[str] = frozenset({"web_search", "image_generation", "code_interpreter"})

# Every key of the request's `features` dict that Open WebUI would act on itself. The feature
# filter strips these; `memory` has no toggle but is sent by the UI from a user setting.
STRIPPED_TOGGLES: frozenset[str] = NATIVE_FEATURES | {"memory"}

# Names a custom feature may not take: they mean something to Open WebUI already.
RESERVED_FEATURE_NAMES: frozenset[str] = STRIPPED_TOGGLES | {"voice"}


def is_native(feature: str) -> bool:
    """True when Open WebUI shows its own toggle for this feature."""
    return feature in NATIVE_FEATURES
