"""Builders that write blueprint directories and function bundles into a temp dir for tests."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
FEATURE_FILTER = REPO / "owui_functions" / "aihub_feature_filter.py"

# The model rows the sample blueprints in blueprints/ produce, sorted.
SAMPLE_MODEL_IDS: tuple[str, ...] = (
    "aihub_agent_pipe.document-analyst.default",
    "aihub_agent_pipe.policy-faq.default",
    "aihub_agent_pipe.research-assistant.default",
    "aihub_agent_pipe.support-desk.billing",
    "aihub_agent_pipe.support-desk.tier1",
    "aihub_agent_pipe.support-desk.tier2",
)

CAPABILITIES: dict[str, Any] = {
    "capabilities": {
        "web_research": {"description": "search", "serves": "web_search"},
        "python_sandbox": {"serves": "code_interpreter"},
        "read_user_files": {"serves": "user_files"},
        "summarise": {"description": "condense"},
    }
}
FEATURES: dict[str, Any] = {"features": {"user_files": {"title": "My files", "description": "d"}}}


def blueprint(bp_id: str = "demo", *, calls: list[str] | None = None, agents: list[dict] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": bp_id,
        "name": bp_id.title(),
        "description": f"{bp_id} blueprint",
        "backend": {"transport": "agui", "url": f"http://127.0.0.1:8700/{bp_id}"},
        "steps": [{"id": "main", "calls": calls or ["summarise"]}],
        "agents": agents or [{"id": "default", "name": f"{bp_id} agent", "access": "public"}],
        **extra,
    }


def write_yaml(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def write_blueprint_dir(
    root: Path,
    blueprints: list[dict[str, Any]] | None = None,
    *,
    capabilities: dict[str, Any] | None = None,
    features: dict[str, Any] | None = None,
) -> Path:
    """A blueprint directory; by default one blueprint `demo` with one public agent."""
    root.mkdir(parents=True, exist_ok=True)
    write_yaml(root / "capabilities.yaml", capabilities or CAPABILITIES)
    write_yaml(root / "features.yaml", FEATURES if features is None else features)
    for bp in blueprints if blueprints is not None else [blueprint()]:
        write_yaml(root / f"{bp['id']}.yaml", bp)
    return root


def write_function_dir(root: Path, blueprint_dir: Path, *extra: Path) -> Path:
    """A bundle directory (for `--bundle`): the real feature filter plus extras.

    `blueprint_dir` is unused since toggle filters are rendered at plan time; kept so callers
    read the same.
    """
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(FEATURE_FILTER, root / FEATURE_FILTER.name)
    for path in extra:
        shutil.copy(path, root / path.name)
    return root
