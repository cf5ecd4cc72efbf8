"""The bad-input corpus against a real Open WebUI 0.12.4: sync stops before its first write.

One instance for the module, synced once from the sample blueprints (plus a group), so every
case meets a non-empty instance. Each case runs `provision sync --yes` in-process with the HTTP
client wrapped to record every request: exit 1, the case's errors on stderr (the same text
`validate` prints), no write request at all, and the instance unchanged afterwards. Cases that
only the instance can decide (a group it lacks, an unset key variable) may read, never write;
all the others must not even connect.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import provisioner.cli as cli
from tests.support.bad_inputs import ARGS, Case, check_stderr, load_cases, make_workspace
from tests.support.builders import REPO
from tests.support.recording import record_cli_requests

CASES = load_cases()
UNSET_KEY_VARIABLE = "AIHUB_BAD_INPUTS_UNSET_KEY"  # named by the api_key_env_unset case


def snapshot(owui: Any) -> dict[str, Any]:
    """Everything sync could change: model rows, functions (with valves), groups."""
    with owui.client() as http:
        state = {
            path: http.get(path).raise_for_status().json()
            for path in ("/api/v1/models/all", "/api/v1/functions/export", "/api/v1/groups/")
        }
        for function in state["/api/v1/functions/export"]:
            function["valves"] = http.get(f"/api/v1/functions/id/{function['id']}/valves").raise_for_status().json()
    return state


@dataclass(frozen=True)
class Baseline:
    owui: Any  # OpenWebUIInstance
    state: dict[str, Any]  # its snapshot, which no case may change


@pytest.fixture(scope="module")
def baseline(openwebui: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Baseline]:
    """The session instance holding the synced samples and a group `Support`."""
    if not openwebui.healthy():
        openwebui.start()
    openwebui.reset()
    with openwebui.client() as http:
        http.post("/api/v1/groups/create", json={"name": "Support", "description": ""}).raise_for_status()
    functions = tmp_path_factory.mktemp("baseline")
    for path in (REPO / "owui_functions").glob("aihub_*.py"):
        shutil.copy(path, functions / path.name)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENWEBUI_URL", openwebui.url)
        mp.setenv("OPENWEBUI_TOKEN", openwebui.token)
        mp.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
        code = cli.main(["sync", "-p", str(REPO / "blueprints"), "--bundle", str(functions), "--yes"])
    assert code == 0, "the baseline sync failed"
    state = snapshot(openwebui)
    # bundle (2) + toggle filters (user_files, deep_research, web_search, code_interpreter, image_generation)
    assert len(state["/api/v1/models/all"]) == 6 and len(state["/api/v1/functions/export"]) == 7
    yield Baseline(openwebui, state)
    openwebui.reset()


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_sync_of_a_bad_blueprint_set_writes_nothing(
    case: Case, baseline: Baseline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(make_workspace(case, tmp_path / "ws"))
    monkeypatch.setenv("OPENWEBUI_URL", baseline.owui.url)
    monkeypatch.setenv("OPENWEBUI_TOKEN", baseline.owui.token)
    monkeypatch.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
    monkeypatch.delenv(UNSET_KEY_VARIABLE, raising=False)
    for name, value in case.environment(baseline.owui.token).items():
        monkeypatch.setenv(name, value)
    recorder = record_cli_requests(monkeypatch)

    code = cli.main(["sync", *ARGS, "--yes"])
    out, err = capsys.readouterr()

    assert (code, out) == (1, ""), err
    check_stderr(case, err)
    assert recorder.writes == []
    if case.needs_instance:
        assert recorder.requests, "this case is decided by what the instance holds"
    else:
        assert recorder.requests == [], "bad files are refused before connecting"
        assert cli.main(["validate", *ARGS]) == 1
        assert capsys.readouterr().err == err, "sync and validate report the same problems"
    assert snapshot(baseline.owui) == baseline.state
