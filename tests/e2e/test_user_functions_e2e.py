"""The user's own functions on a real Open WebUI 0.12.4: uploaded, owned, active, attached, run.

The filter is the example `provision init` ships (functions/pii_redaction.py); the action a
minimal Action. What reaches the agent (the scripted AG-UI server's record) shows the user's
filter ran on the way; `/api/models` shows the action button on the agent's model.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from provisioner.scaffold import render
from tests.support.builders import REPO, blueprint, write_blueprint_dir
from tests.support.chat_support import get, provision

ACTION = (
    '"""\ntitle: Copy answer\ndescription: Copies the answer.\n"""\n\n\n'
    "class Action:\n    async def action(self, body: dict) -> None:\n        return None\n"
)
MODEL = "aihub_agent_pipe.desk.triage"


def user_repo(tmp_path: Path, agent_url: str) -> list[str]:
    agents: list[dict[str, Any]] = [
        {"id": "triage", "name": "Triage", "access": "public", "actions": ["copy_answer"]},
        {"id": "plain", "name": "Plain", "access": "public"},
    ]
    bp = blueprint("desk", agents=agents, filters=["pii_redaction"])
    bp["backend"] = {"transport": "agui", "url": agent_url}
    root = write_blueprint_dir(tmp_path / "blueprints", [bp])
    functions = tmp_path / "functions"
    functions.mkdir()
    (functions / "pii_redaction.py").write_text(render("pii_redaction.py"), encoding="utf-8")
    (functions / "copy_answer.py").write_text(ACTION, encoding="utf-8")
    bundle = tmp_path / "bundle"
    shutil.copytree(REPO / "owui_functions", bundle, ignore=shutil.ignore_patterns("__pycache__"))
    return ["-p", str(root), "--functions", str(functions), "--bundle", str(bundle)]


def test_user_functions_are_synced_attached_and_run(owui, agui_server: Any, tmp_path: Path, capsys) -> None:
    args = user_repo(tmp_path, agui_server.agent_url)
    code, out, err = provision(capsys, "sync", *args, "--yes")
    assert code == 0, out + err
    functions = {f["id"]: f for f in get(owui, "/api/v1/functions/export")}
    for ident, kind in (("pii_redaction", "filter"), ("copy_answer", "action")):
        assert functions[ident]["type"] == kind
        assert functions[ident]["is_active"] is True and functions[ident]["is_global"] is False
        assert functions[ident]["meta"]["aihub"]["managed_by"] == "aihub-provision"
    rows = {r["id"]: r for r in get(owui, "/api/v1/models/all")}
    assert rows[MODEL]["meta"]["filterIds"] == ["aihub_feature_filter", "pii_redaction"]
    assert rows[MODEL]["meta"]["actionIds"] == ["copy_answer"]
    assert rows["aihub_agent_pipe.desk.plain"]["meta"]["actionIds"] == []
    served = {m["id"]: m for m in get(owui, "/api/models")["data"]}
    assert [a["id"] for a in served[MODEL]["actions"]] == ["copy_answer"]
    assert served["aihub_agent_pipe.desk.plain"]["actions"] == []

    # A chat: the agent gets the message with the address masked by the user's filter.
    agui_server.clear()
    body = {
        "model": MODEL,
        "stream": False,
        "messages": [{"role": "user", "content": "Reset it for jane.doe@example.com"}],
    }
    with owui.client(timeout=60) as http:
        response = http.post("/api/chat/completions", json=body)
    assert response.status_code == 200, response.text
    [run] = agui_server.recorded()
    sent = [m["content"] for m in run["messages"] if m["role"] == "user"]
    assert sent == ["Reset it for [e-mail]"], sent

    # Idempotent, and removing the attachment from the blueprint detaches it on the next sync.
    assert provision(capsys, "diff", *args, "--detailed-exitcode")[0] == 0
    desk = Path(args[1]) / "desk.yaml"
    data = yaml.safe_load(desk.read_text())
    del data["agents"][0]["actions"]
    desk.write_text(yaml.safe_dump(data, sort_keys=False))
    code, out, err = provision(capsys, "sync", *args, "--yes")
    assert code == 0, out + err
    assert get(owui, "/api/v1/models/model", id=MODEL)["meta"]["actionIds"] == []
