"""Two syncs of different blueprint versions at once, and an admin's edit between plan and apply,
against the real Open WebUI of the session.

Each `provision sync` runs as its own process on a pseudo-terminal, so it shows its plan and then
waits at "Apply these changes?": the test answers when it wants the writes to start. That makes
the race deterministic: both plans are read from the same instance, then both apply at once.
"""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.support.builders import REPO, blueprint, write_blueprint_dir

BLUEPRINTS = 8
AGENTS = 5  # 40 rows: enough for the two syncs' writes to overlap, quick to write
PROMPT = "Apply these changes?"
ANOTHER_SYNC = "another sync running at the same time"


def version_dir(root: Path, version: str) -> list[str]:
    """The same 40 agents; every description and backend URL says `version` (so does the pipe's AGENTS valve)."""
    blueprints = [
        blueprint(
            f"team{b}",
            description=f"team {b}, version {version}",
            backend={"transport": "agui", "url": f"http://127.0.0.1:8700/{version}/team{b}"},
            agents=[
                {
                    "id": f"agent{a}",
                    "name": f"Team {b} agent {a}",
                    "access": "public",
                    "description": f"agent {a}, version {version}",
                }
                for a in range(AGENTS)
            ],
        )
        for b in range(BLUEPRINTS)
    ]
    path = write_blueprint_dir(root / version / "blueprints", blueprints)
    functions = root / version / "functions"
    functions.mkdir()
    for source in (REPO / "owui_functions").glob("aihub_*.py"):
        shutil.copy(source, functions / source.name)
    return ["-p", str(path), "--bundle", str(functions)]


class Sync:
    """`provision sync ARGS` in a process of its own, stdin a terminal: it stops at the prompt."""

    def __init__(self, owui: Any, *args: str) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("CI", "OPENWEBUI_TOKEN_FILE")}
        env.update(OPENWEBUI_URL=owui.url, OPENWEBUI_TOKEN=owui.token, NO_COLOR="1")
        self._terminal, tty = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "provisioner", "sync", *args],
            cwd=REPO,
            env=env,
            stdin=tty,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        os.close(tty)
        self._err: list[str] = []
        self._out: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(s, b), daemon=True)
            for s, b in ((self.process.stderr, self._err), (self.process.stdout, self._out))
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: Any, into: list[str]) -> None:
        for line in iter(lambda: stream.read(1), ""):
            into.append(line)

    def wait_for_prompt(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while PROMPT not in "".join(self._err):
            assert self.process.poll() is None, "".join(self._err)
            assert time.monotonic() < deadline, f"no prompt after {timeout} s:\n{''.join(self._err)}"
            time.sleep(0.05)

    def answer_yes(self) -> None:
        os.write(self._terminal, b"y\n")

    def finish(self, timeout: float = 300) -> tuple[int, str]:
        code = self.process.wait(timeout=timeout)
        for reader in self._readers:
            reader.join(timeout=10)
        os.close(self._terminal)
        return code, "".join(self._err)


def run(owui: Any, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENWEBUI_TOKEN_FILE"}
    env.update(OPENWEBUI_URL=owui.url, OPENWEBUI_TOKEN=owui.token, NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "provisioner", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )


def descriptions(owui: Any) -> dict[str, str]:
    with owui.client() as http:
        rows = http.get("/api/v1/models/all").raise_for_status().json()
    return {r["id"]: (r.get("meta") or {}).get("description", "") for r in rows}


def test_two_syncs_of_different_versions_at_once_cannot_both_succeed_and_a_rerun_converges(
    clean_openwebui, tmp_path: Path
) -> None:
    owui = clean_openwebui
    v1, v2, v3 = (version_dir(tmp_path, v) for v in ("v1", "v2", "v3"))
    first = run(owui, "sync", "--prune", "--yes", *v1)
    assert first.returncode == 0, first.stderr
    syncs = [Sync(owui, "--prune", *v2), Sync(owui, "--prune", *v3)]
    for sync in syncs:
        sync.wait_for_prompt()  # both plans are read: from the same v1 instance
    for sync in syncs:
        sync.answer_yes()
    results = [sync.finish() for sync in syncs]
    codes = [code for code, _ in results]
    assert codes != [0, 0], "both syncs exited 0:\n" + "\n".join(err for _, err in results)
    for code, err in results:
        if code != 0:  # the loser names the conflict: which object, and when it changed
            assert code == 1 and ANOTHER_SYNC in err, err
            assert any(f" was {what}" in err for what in ("changed", "created", "deleted")), err
    rerun = run(owui, "sync", "--prune", "--yes", *v3)
    assert rerun.returncode == 0, rerun.stderr
    assert run(owui, "diff", "--prune", "--detailed-exitcode", *v3).returncode == 0
    found = descriptions(owui)
    assert len(found) == BLUEPRINTS * AGENTS and all(d.endswith("version v3") for d in found.values()), found


def test_a_row_an_admin_edits_between_plan_and_apply_is_named_and_kept(clean_openwebui, tmp_path: Path) -> None:
    owui = clean_openwebui
    v1, v2 = (version_dir(tmp_path, v) for v in ("v1", "v2"))
    assert run(owui, "sync", "--prune", "--yes", *v1).returncode == 0
    edited = "aihub_agent_pipe.team3.agent2"
    sync = Sync(owui, *v2)
    sync.wait_for_prompt()
    time.sleep(1.1)  # the edit lands in a later second than the plan's read (not needed, but realistic)
    with owui.client() as http:
        row = http.get("/api/v1/models/model", params={"id": edited}).raise_for_status().json()
        form = {k: row[k] for k in ("id", "base_model_id", "name", "meta", "params")}
        form["params"] = {**(row.get("params") or {}), "system": "an admin's own prompt"}
        http.post(
            "/api/v1/models/model/update",
            json={**form, "access_grants": row.get("access_grants", [])},
            params={"id": edited},
        ).raise_for_status()
    sync.answer_yes()
    code, err = sync.finish()
    assert code == 1, err
    assert "Nothing was written" in err and f"model {edited} was changed at " in err, err
    assert "after this sync's plan read it" in err, err
    found = descriptions(owui)
    assert all(d.endswith("version v1") for d in found.values()), "a write went through"
    with owui.client() as http:
        row = http.get("/api/v1/models/model", params={"id": edited}).raise_for_status().json()
    assert row["params"]["system"] == "an admin's own prompt"
    rerun = run(owui, "sync", "--yes", *v2)
    assert rerun.returncode == 0, rerun.stderr
    with owui.client() as http:
        row = http.get("/api/v1/models/model", params={"id": edited}).raise_for_status().json()
    assert row["params"]["system"] == "an admin's own prompt" and row["meta"]["description"].endswith("version v2")
