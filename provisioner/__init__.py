"""aihub-provision: make an Open WebUI instance match a directory of agent blueprints.

The pipeline, top to bottom: load_catalog (YAML -> Catalog) -> build_desired (-> InstanceState)
-> observe (Open WebUI listings -> InstanceState) -> make_plan (-> Plan) -> apply_plan.
`load_inputs` and `prepare_plan` (pipeline.py) are those steps as `diff` and `sync` run them.

Layer: cli.
"""

from __future__ import annotations

from typing import Any

from .version import __version__

__all__ = [
    "__version__",
    "apply_plan",
    "build_desired",
    "load_catalog",
    "load_inputs",
    "make_plan",
    "observe",
    "prepare_plan",
]


def __getattr__(name: str) -> Any:  # lazy, so `provision --help` stays fast
    if name == "load_catalog":
        from .loader import load_catalog

        return load_catalog
    if name == "build_desired":
        from .desired import build_desired

        return build_desired
    if name == "observe":
        from .openwebui.observed import observe

        return observe
    if name == "make_plan":
        from .plan import make_plan

        return make_plan
    if name in ("load_inputs", "prepare_plan"):
        from . import pipeline

        return getattr(pipeline, name)
    if name == "apply_plan":
        from .openwebui.apply import apply_plan

        return apply_plan
    raise AttributeError(name)
