"""Faults during a sync against a real Open WebUI 0.12.4: the server stopped part-way, two syncs at once.

The end state is checked on the server itself: every row and function exactly once, every
function active, `diff --detailed-exitcode` 0, and one more sync sending no write at all.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

import provisioner.cli as cli
import provisioner.openwebui.client as client_module
from provisioner.desired import build_desired
from provisioner.openwebui.apply import apply_plan
from provisioner.openwebui.client import OpenWebUIClient
from provisioner.openwebui.observed import observe
from provisioner.pipeline import load_inputs
from provisioner.plan import make_plan
from provisioner.toggle_filters import toggle_translations
from tests.support.builders import REPO, SAMPLE_MODEL_IDS

PROVISION = Path(sys.executable).with_name("provision")
FUNCTIONS = [
    "aihub_agent_pipe",
    "aihub_feature_filter",
    "aihub_toggle_code_interpreter",
    "aihub_toggle_deep_research",
    "aihub_toggle_image_generation",
    "aihub_toggle_user_files",
    "aihub_toggle_web_search",
]
MODELS = list(SAMPLE_MODEL_IDS)
ANOTHER_SYNC = "another sync running at the same time"


class Writes:
    """Counts the write requests the CLI sends and can run an action on the answer to one of them."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []
        self.on_answer: Callable[[httpx.Response], None] = lambda response: None

    def request(self, request: httpx.Request) -> None:
        if request.method != "GET":
            self.sent.append((request.method, request.url.path))

    def response(self, response: httpx.Response) -> None:
        self.on_answer(response)


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> Writes:
    recorder = Writes()
    monkeypatch.setattr(
        client_module,
        "make_http_client",
        lambda timeout: httpx.Client(
            timeout=timeout,
            trust_env=False,
            event_hooks={"request": [recorder.request], "response": [recorder.response]},
        ),
    )
    return recorder


@pytest.fixture
def owui(clean_openwebui, monkeypatch: pytest.MonkeyPatch):
    connect(clean_openwebui, monkeypatch)
    return clean_openwebui


def connect(instance, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point the CLI at the instance (again after a restart: the port may change)."""
    monkeypatch.setenv("OPENWEBUI_URL", instance.url)
    monkeypatch.setenv("OPENWEBUI_TOKEN", instance.token)
    monkeypatch.delenv("OPENWEBUI_TOKEN_FILE", raising=False)


@pytest.fixture
def bundle(tmp_path: Path) -> list[str]:
    """The sample blueprints and the real function bundle (filters and agent pipe)."""
    functions = tmp_path / "functions"
    functions.mkdir()
    for path in (REPO / "owui_functions").glob("aihub_*.py"):
        shutil.copy(path, functions / path.name)
    return ["-p", str(REPO / "blueprints"), "--bundle", str(functions)]


def provision(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def get(owui, path: str) -> Any:
    with owui.client() as http:
        return http.get(path).raise_for_status().json()


def assert_desired_state(owui, capsys, bundle: list[str], writes: Writes) -> None:
    """Every row and function exactly once, functions active, diff clean, a re-run writes nothing."""
    rows = get(owui, "/api/v1/models/all")
    assert sorted(r["id"] for r in rows) == MODELS  # sorted list, not a set: duplicates would show
    for row in rows:
        grants = [(g["principal_type"], g["principal_id"], g["permission"]) for g in row["access_grants"]]
        assert len(grants) == len(set(grants)), row["id"]
    functions = get(owui, "/api/v1/functions/export")
    assert sorted(f["id"] for f in functions) == FUNCTIONS
    flags = {f["id"]: (f["is_active"], f["is_global"]) for f in functions}
    assert set(flags.values()) == {(True, False)}, flags
    assert provision(capsys, "diff", *bundle, "--detailed-exitcode")[0] == 0
    writes.sent.clear()
    code, out, _ = provision(capsys, "sync", *bundle)
    assert code == 0 and "No changes." in out and writes.sent == []


def stop_server_on(owui, method: str, path: str, nth: int, *, lose_answer: bool) -> Callable[[httpx.Response], None]:
    """On the answer to the nth `method path`, stop Open WebUI (data kept); optionally lose that answer."""
    seen = [0]

    def on_answer(response: httpx.Response) -> None:
        request = response.request
        if request.method != method or request.url.path != path:
            return
        seen[0] += 1
        if seen[0] == nth:
            owui.stop(keep_data=True)
            if lose_answer:  # the write was committed, the client never hears of it
                raise httpx.RemoteProtocolError("server disconnected without sending a response", request=request)

    return on_answer


def test_a_sync_cut_off_by_the_server_stopping_after_a_write_is_finished_by_the_next_run(
    owui, bundle, writes, capsys, monkeypatch
) -> None:
    # The answer to the second function create arrives, then the server is gone: that
    # function exists but was never activated, and nothing after it was attempted.
    writes.on_answer = stop_server_on(owui, "POST", "/api/v1/functions/create", 2, lose_answer=False)
    code, out, err = provision(capsys, "sync", *bundle)
    assert code == 1
    assert (
        out.startswith(f"Plan: {len(MODELS) + len(FUNCTIONS)} to add, 0 to change, 0 to destroy.")
        and "Applied:" not in out
    )
    assert "Sync stopped part-way" in err
    assert "applied        create function aihub_agent_pipe" in err
    assert "FAILED         create function aihub_feature_filter: cannot reach Open WebUI" in err
    assert "not attempted  create function aihub_toggle_user_files" in err
    for model in MODELS:
        assert f"not attempted  create model {model}" in err
    assert not owui.healthy()

    writes.on_answer = lambda response: None
    owui.start()
    connect(owui, monkeypatch)
    half_done = {f["id"]: f["is_active"] for f in get(owui, "/api/v1/functions/export")}
    assert half_done == {"aihub_agent_pipe": True, "aihub_feature_filter": False}
    code, out, _ = provision(capsys, "sync", *bundle, "-o", "json")
    assert code == 0
    plan = json.loads(out)["plan"]
    # every model, and every function but the two the cut-off sync created (one then activated)
    assert plan["summary"] == {"add": len(MODELS) + len(FUNCTIONS) - 2, "change": 1, "destroy": 0}
    assert {
        "kind": "function",
        "id": "aihub_feature_filter",
        "action": "update",
        "fields": [{"path": "is_active", "before": False, "after": True}],
    } in plan["changes"]
    assert_desired_state(owui, capsys, bundle, writes)


def test_a_create_committed_as_the_server_died_is_not_created_again(owui, bundle, writes, capsys, monkeypatch) -> None:
    # The third model create is committed, then the server stops before the client reads the
    # answer: the client cannot know it landed and reports it failed; the next run finds it.
    writes.on_answer = stop_server_on(owui, "POST", "/api/v1/models/create", 3, lose_answer=True)
    code, out, _ = provision(capsys, "sync", *bundle, "-o", "json")
    assert code == 1
    result = json.loads(out)["result"]
    assert [(f["id"], f["action"]) for f in result["failed"]] == [(MODELS[2], "create")]
    assert "cannot reach Open WebUI" in result["failed"][0]["error"]
    assert [n["id"] for n in result["not_attempted"]] == MODELS[3:]
    assert result["applied"] == {"add": len(FUNCTIONS) + 2, "change": 0, "destroy": 0}

    writes.on_answer = lambda response: None
    owui.start()
    connect(owui, monkeypatch)
    assert sorted(r["id"] for r in get(owui, "/api/v1/models/all")) == MODELS[:3]
    code, out, _ = provision(capsys, "sync", *bundle, "-o", "json")
    assert code == 0
    changes = json.loads(out)["plan"]["changes"]
    assert [(c["id"], c["action"]) for c in changes] == [(m, "create") for m in MODELS[3:]]
    assert_desired_state(owui, capsys, bundle, writes)


def deactivate_functions_and_edit_a_row(owui) -> None:
    """Drift a concurrent sync has to repair: every function off (a flip each) and one row renamed."""
    with owui.client() as http:
        for function_id in FUNCTIONS:
            flipped = http.post(f"/api/v1/functions/id/{function_id}/toggle").raise_for_status().json()
            assert flipped["is_active"] is False
        row = http.get("/api/v1/models/model", params={"id": MODELS[0]}).raise_for_status().json()
        form = {k: row[k] for k in ("id", "base_model_id", "name", "meta", "params")}
        http.post("/api/v1/models/model/update", json={**form, "name": "Renamed by hand"}).raise_for_status()


@pytest.mark.parametrize("start", ["empty", "drifted"])
def test_two_syncs_at_once_both_finish_or_one_fails_clearly(
    owui, bundle, writes, capsys, tmp_path: Path, start: str
) -> None:
    if start == "drifted":
        assert provision(capsys, "sync", *bundle)[0] == 0
        deactivate_functions_and_edit_a_row(owui)
    env = {**os.environ, "OPENWEBUI_URL": owui.url, "OPENWEBUI_TOKEN": owui.token, "NO_COLOR": "1"}
    env.pop("OPENWEBUI_TOKEN_FILE", None)
    runs = []
    for name in ("a", "b"):
        with open(tmp_path / f"{name}.out", "w") as out, open(tmp_path / f"{name}.err", "w") as err:
            runs.append(
                subprocess.Popen(
                    [str(PROVISION), "sync", "--yes", *bundle],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                )
            )
    results = [
        (run.wait(timeout=180), (tmp_path / f"{name}.err").read_text()) for run, name in zip(runs, "ab", strict=True)
    ]
    codes = sorted(code for code, _ in results)
    assert codes in ([0, 0], [0, 1]), results
    for code, errors in results:
        if code == 1:  # the loser names the cause: a create that lost the race, or a conflict
            assert ("Sync stopped" in errors or "Sync finished its writes" in errors) and ANOTHER_SYNC in errors, errors
    assert_desired_state(owui, capsys, bundle, writes)


def test_two_writers_flipping_the_same_functions_at_once_leave_them_active(owui, bundle, writes, capsys) -> None:
    """Both read "inactive", then both flip at the same moment: the flips must not cancel out."""
    assert provision(capsys, "sync", *bundle)[0] == 0
    with owui.client() as http:
        for function_id in FUNCTIONS:
            http.post(f"/api/v1/functions/id/{function_id}/toggle").raise_for_status()
    functions_dir = Path(bundle[3])
    catalog, functions = load_inputs(REPO / "blueprints", None, functions_dir)
    # As sync builds it (pipeline.prepare_plan): without the toggles' translations the marker's
    # fingerprint differs, each writer rewrites the row, and reads its flag from that write's answer.
    desired = build_desired(catalog, functions, groups={}, translations=toggle_translations(catalog))
    both_read = threading.Barrier(2, timeout=60)
    flips: list[str] = []

    def after_reading_a_function(response: httpx.Response) -> None:
        # Hold each writer after its read of a function until the other has read it too.
        parts = response.request.url.path.split("/")
        if response.request.method == "GET" and len(parts) == 6 and parts[4] == "id":
            both_read.wait()

    def count_flips(request: httpx.Request) -> None:
        if request.url.path.endswith("/toggle"):
            flips.append(request.url.path.split("/")[5])

    def writer(errors: list[BaseException]) -> None:
        http = httpx.Client(
            timeout=60, trust_env=False, event_hooks={"request": [count_flips], "response": [after_reading_a_function]}
        )
        try:
            with OpenWebUIClient(base_url=owui.url, token=owui.token, http=http) as client:
                plan = make_plan(desired, observe(client.list_models(), client.list_functions()))
                assert {(c.kind, c.action.value) for c in plan.changes} == {("function", "update")}
                # Only the flag changes, so each writer reads it (and waits for the other) before flipping.
                assert {(f.path, c.rewrite_marker) for c in plan.changes for f in c.fields} == {("is_active", False)}
                apply_plan(plan, client)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            http.close()

    errors: list[BaseException] = []
    threads = [threading.Thread(target=writer, args=(errors,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert all(flips.count(f) >= 2 for f in FUNCTIONS), flips  # both writers really flipped each one
    assert_desired_state(owui, capsys, bundle, writes)
