"""The ChatFeature vocabulary: which features Open WebUI has a native toggle for.

Any other feature name is *custom*: Open WebUI has no toggle for it, so the bundle ships one
toggle filter per custom feature (see toggle_filters.py).

Layer: vocabulary.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

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


@dataclass(frozen=True)
class NativeToggle:
    """How the bundle's toggle for a native feature looks: Open WebUI's own label, tooltip and icon."""

    title: str
    description: str
    svg: str

    @property
    def icon(self) -> str:
        """The icon as a data URI (toggle filters show SVG; Open WebUI inverts it in dark mode)."""
        return "data:image/svg+xml;base64," + base64.b64encode(self.svg.encode("utf-8")).decode("ascii")


# Agents get every supported feature, native ones included, as a toggle filter of the bundle: Open
# WebUI hides its own toggles while an instance-wide switch is off (the default for web search and
# image generation), and when the switch is on it would run the feature itself. Labels, tooltips
# and icons (heroicons / iconoir outlines) are the ones Open WebUI 0.12.4's chat input uses
# (MessageInput/IntegrationsMenu.svelte), so the toggle looks native.
NATIVE_TOGGLES: dict[str, NativeToggle] = {
    "web_search": NativeToggle(
        "Web Search",
        "Search the internet",
        '<svg xmlns="http://www.w3.org/2000/svg" fill="none" viewBox="0 0 24 24" stroke-width="1.5"'
        ' stroke="currentColor">'
        '<path stroke-linecap="round" stroke-linejoin="round" d="M12 21a9.004 9.004 0 0 0 8.716-6.747M12'
        " 21a9.004 9.004 0 0 1-8.716-6.747M12 21c2.485 0 4.5-4.03 4.5-9S14.485 3 12 3m0 18c-2.485"
        " 0-4.5-4.03-4.5-9S9.515 3 12 3m0 0a8.997 8.997 0 0 1 7.843 4.582M12 3a8.997 8.997 0 0 0-7.843"
        " 4.582m15.686 0A11.953 11.953 0 0 1 12 10.5c-2.998 0-5.74-1.1-7.843-2.918m15.686 0A8.959 8.959 0 0"
        " 1 21 12c0 .778-.099 1.533-.284 2.253m0 0A17.919 17.919 0 0 1 12 16.5c-3.162"
        ' 0-6.133-.815-8.716-2.247m0 0A9.015 9.015 0 0 1 3 12c0-1.605.42-3.113 1.157-4.418"/>'
        "</svg>",
    ),
    "image_generation": NativeToggle(
        "Image",
        "Generate an image",
        '<svg xmlns="http://www.w3.org/2000/svg" fill="none" viewBox="0 0 24 24" stroke-width="1.5"'
        ' stroke="currentColor" stroke-linecap="round" stroke-linejoin="round">'
        '<path d="M21 7.6V20.4C21 20.7314 20.7314 21 20.4 21H7.6C7.26863 21 7 20.7314 7 20.4V7.6C7 7.26863'
        ' 7.26863 7 7.6 7H20.4C20.7314 7 21 7.26863 21 7.6Z"/>'
        '<path d="M18 4H4.6C4.26863 4 4 4.26863 4 4.6V18"/><path d="M7 16.8L12.4444 15L21 18"/>'
        '<path d="M16.5 13C15.6716 13 15 12.3284 15 11.5C15 10.6716 15.6716 10 16.5 10C17.3284 10 18 10.6716'
        ' 18 11.5C18 12.3284 17.3284 13 16.5 13Z"/>'
        "</svg>",
    ),
    "code_interpreter": NativeToggle(
        "Code Interpreter",
        "Execute code for analysis",
        '<svg xmlns="http://www.w3.org/2000/svg" fill="none" viewBox="0 0 24 24" stroke-width="1.75"'
        ' stroke="currentColor" stroke-linecap="round" stroke-linejoin="round">'
        '<path d="M13 16H18"/><path d="M6 8L10 12L6 16"/>'
        '<path d="M2 18V6C2 4.89543 2.89543 4 4 4H20C21.1046 4 22 4.89543 22 6V18C22 19.1046 21.1046 20 20'
        ' 20H4C2.89543 20 2 19.1046 2 18Z"/>'
        "</svg>",
    ),
}
