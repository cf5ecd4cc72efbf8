"""SIGTERM to a real `provision sync` process against the session's Open WebUI, mid-apply.

The process must finish the write in flight, start nothing new, print `{plan, result}` (it was
run with `-o json`) naming what was and was not applied, and exit 143; the rows on the server
are exactly the ones the report says were applied, and the next sync converges.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.builders import REPO, blueprint, write_blueprint_dir
from tests.support.chat_support import get, provision

PROVISION = Path(sys.executable).with_name("provision")
AGENTS = 40  # enough writes that the signal lands long before the last one
FIRST_ROW_WRITTEN = "POST /api/v1/models/create -> 200"


def test_sigterm_mid_sync_reports_the_partial_sync_and_the_next_run_converges(owui, tmp_path: Path, capsys) -> None:
    agents = [{"id": f"agent-{i:02}", "name": f"Agent {i:02}", "access": "public"} for i in range(AGENTS)]
    root = write_blueprint_dir(tmp_path / "blueprints", [blueprint("fleet", agents=agents)])
    args = ["-p", str(root), "--bundle", str(REPO / "owui_functions")]
    env = {**os.environ, "OPENWEBUI_URL": owui.url, "OPENWEBUI_TOKEN": owui.token, "NO_COLOR": "1"}
    env.pop("OPENWEBUI_TOKEN_FILE", None)
    run = subprocess.Popen(
        [str(PROVISION), "-v", "sync", "--yes", "-o", "json", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 120
        assert run.stderr is not None
        while time.monotonic() < deadline:
            line = run.stderr.readline()
            if not line:
                break
            seen.append(line)
            if FIRST_ROW_WRITTEN in line:
                run.send_signal(signal.SIGTERM)
                break
        out, rest = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    err = "".join(seen) + rest
    assert run.returncode == 143, err
    assert "SIGTERM: stopping after the write in flight" in err and "Sync stopped part-way by SIGTERM" in err
    data = json.loads(out)
    assert set(data) == {"plan", "result"}
    result = data["result"]
    assert result["stopped_by"] == "SIGTERM" and result["failed"] == []
    applied = {c["id"] for c in result["applied_changes"] if c["kind"] == "model"}
    not_attempted = {c["id"] for c in result["not_attempted"]}
    assert 1 <= len(applied) < AGENTS and len(applied) + len(not_attempted) == AGENTS, result
    assert _model_ids(owui) == applied  # the write in flight finished; none started after the signal
    code, out, err = provision(capsys, "sync", "--yes", *args)
    assert code == 0, out + err
    assert _model_ids(owui) == {f"aihub_agent_pipe.fleet.agent-{i:02}" for i in range(AGENTS)}
    assert provision(capsys, "diff", "--detailed-exitcode", *args)[0] == 0


def _model_ids(owui) -> set[str]:
    return {row["id"] for row in get(owui, "/api/v1/models/all")}
