"""Open WebUI 0.12's `meta.capabilities` keys and the value we write for each.

Open WebUI treats most missing keys as enabled, so every key is written explicitly.

Layer: source.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .features import NATIVE_FEATURES

# Every capability key Open WebUI 0.12.4 knows (Capabilities.svelte, DEFAULT_CAPABILITIES).
CAPABILITY_KEYS: tuple[str, ...] = (
    "vision",
    "file_upload",
    "file_context",
    "web_search",
    "image_generation",
    "code_interpreter",
    "terminal",
    "usage",
    "citations",
    "status_updates",
    "memory",
    "builtin_tools",
)

# Keys a blueprint may set under `openwebui_capabilities`, with the value used when it does not.
# Agents get no images or uploads unless they ask; Open WebUI's own file RAG stays off because
# the agent, not Open WebUI, does the work; rendering helpers stay on.
OVERRIDABLE_DEFAULTS: Mapping[str, bool] = {
    "vision": False,
    "file_upload": False,
    "file_context": False,
    "usage": True,
    "citations": True,
    "status_updates": True,
}

# Keys that would make Open WebUI do agent work itself, or show its own toggle for a feature the
# agent does (the native features reach agents through the bundle's toggle filters): always off.
ALWAYS_OFF: tuple[str, ...] = ("memory", "builtin_tools", "terminal", *sorted(NATIVE_FEATURES))


# What an agent reads (a capability's `reads`) -> the keys that let users attach it. file_context
# stays off: the agent reads the file itself, Open WebUI runs no retrieval for it.
READS_CAPABILITIES: Mapping[str, Mapping[str, bool]] = {
    "documents": {"file_upload": True, "file_context": False},
    "images": {"vision": True},
}


def model_capabilities(
    supported_features: Iterable[str], overrides: Mapping[str, bool] | None = None, reads: Iterable[str] = ()
) -> dict[str, bool]:
    """The full capability object for an agent row, in Open WebUI's key order.

    What the agent `reads` switches on its inputs (READS_CAPABILITIES); `overrides` (the
    blueprint's openwebui_capabilities) win over both that and the defaults.

    The three native feature keys are off whatever the agent supports: with them off Open WebUI
    neither shows its own toggle nor runs its own search, image generation or code interpreter
    for the agent; the agent's supported features show as the bundle's toggle filters instead.
    `supported_features` is accepted so callers need not know that.
    """
    del supported_features
    derived = {key: value for read in sorted(reads) for key, value in READS_CAPABILITIES[read].items()}
    values: dict[str, bool] = {**OVERRIDABLE_DEFAULTS, **derived, **(overrides or {})}
    values.update({key: False for key in ALWAYS_OFF})
    return {key: values[key] for key in CAPABILITY_KEYS}
