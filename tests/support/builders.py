"""Builders that write blueprint directories and function bundles into a temp dir for tests."""

from __future__ import annotations

import shutil
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from provisioner.openwebui.apply import ApplyReport

REPO = Path(__file__).resolve().parents[2]
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


def blueprint(
    bp_id: str = "demo", *, calls: list[str] | None = None, agents: list[dict] | None = None, **extra: Any
) -> dict[str, Any]:
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


def set_backend(
    root: Path, agent_url: str, *, only: str | None = None, adjust: Callable[[dict[str, Any]], None] | None = None
) -> None:
    """Every blueprint in ``root`` (or just the one with id ``only``) served by the AG-UI agent at
    ``agent_url``, the agents' own backend overrides dropped; ``adjust`` may change each agent on
    the way (files are read in name order)."""
    for path in sorted(root.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if "agents" not in data or (only and data["id"] != only):
            continue  # capabilities.yaml, features.yaml, the other blueprints
        data["backend"] = {"transport": "agui", "url": agent_url}
        for agent in data["agents"]:
            agent.pop("backend", None)
            if adjust is not None:
                adjust(agent)
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def samples_on(root: Path, agent_url: str, *, adjust: Callable[[dict[str, Any]], None] | None = None) -> Path:
    """A copy of the sample blueprints (blueprints/) at ``root``, every backend on ``agent_url``."""
    shutil.copytree(REPO / "blueprints", root, dirs_exist_ok=True)
    set_backend(root, agent_url, adjust=adjust)
    return root


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released): a backend that is down."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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


def report_of(error: BaseException) -> ApplyReport:
    """An ApplyError's report, as the ApplyReport apply raises it with (errors.py names only the
    Protocol it needs, to import nothing of the package)."""
    from provisioner.openwebui.apply import ApplyReport

    report = getattr(error, "report", None)
    assert isinstance(report, ApplyReport), report
    return report
