"""Faults during a sync, through the CLI against the in-memory Open WebUI.

Each fault must end in exit 0 after bounded retries, or exit 1 with a clear message and a report
of what was applied and what was not; either way the next `sync` repairs the instance with
nothing lost and nothing created twice, and a listing that cannot be trusted prunes nothing.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

import provisioner.cli as cli
import provisioner.pipeline as pipeline
from provisioner.openwebui.client import OpenWebUIClient
from tests.support.builders import REPO, SAMPLE_MODEL_IDS
from tests.support.fake_owui import FakeOpenWebUI, fake_instance_for_cli
from tests.support.run_cli import run_cli

TOKEN = "sk-faults-test-token-0123456789"
SAMPLES = ["-p", str(REPO / "blueprints"), "--bundle", str(REPO / "owui_functions")]
SAMPLE_MODELS = list(SAMPLE_MODEL_IDS)
# The bundle (feature filter, agent pipe) and one toggle filter per feature the samples' agents
# show: user_files, deep_research (custom), web_search, code_interpreter, image_generation (native).
SAMPLE_FUNCTIONS = 7
SAMPLE_ADDS = len(SAMPLE_MODELS) + SAMPLE_FUNCTIONS
ORPHAN = "aihub_agent_pipe.retired.agent"
ANOTHER_SYNC = "another sync running at the same time"

Fault = Callable[[str, str, Any], "httpx.Response | None"]


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The backoff delays the CLI's client asked for (recorded instead of slept)."""
    delays: list[float] = []
    monkeypatch.setattr(pipeline, "OpenWebUIClient", functools.partial(OpenWebUIClient, sleep=delays.append))
    monkeypatch.setattr(cli, "OpenWebUIClient", functools.partial(OpenWebUIClient, sleep=delays.append))
    return delays


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, sleeps: list[float]) -> Iterator[FakeOpenWebUI]:
    with fake_instance_for_cli(monkeypatch, TOKEN) as server:
        yield server


run = functools.partial(run_cli, secrets=(TOKEN,))


def fail(
    path: str, answer: httpx.Response | Exception, *, times: int | None = None, body_id: str | None = None
) -> Fault:
    """A fault answering `answer` (or raising it) to the first `times` matching requests (None: all)."""
    left = [times]

    def fault(method: str, request_path: str, body: Any) -> httpx.Response | None:
        if request_path != path or (body_id and (body or {}).get("id") != body_id) or left[0] == 0:
            return None
        if left[0] is not None:
            left[0] -= 1
        if isinstance(answer, Exception):
            raise answer
        return answer

    return fault


def count(fake: FakeOpenWebUI, path: str) -> int:
    return sum(1 for _, p in fake.calls if p == path)


def assert_converged(capsys, fake: FakeOpenWebUI) -> None:
    """Desired state reached: every row once, every function active, and a re-run writes nothing."""
    assert sorted(fake.models) == SAMPLE_MODELS and len(fake.functions) == SAMPLE_FUNCTIONS
    assert all(f["is_active"] and not f["is_global"] for f in fake.functions.values())
    fake.calls.clear()
    code, out, _ = run(capsys, "sync", *SAMPLES)
    assert code == 0 and "No changes." in out and fake.writes == []


def managed_orphan() -> dict[str, Any]:
    """A row provision wrote for a blueprint that is gone: the one thing `--prune` may delete."""
    marker = {"managed_by": "aihub-provision", "blueprint": "retired", "agent": "agent", "features": []}
    return {
        "id": ORPHAN,
        "base_model_id": None,
        "name": "Retired",
        "params": {},
        "is_active": True,
        "meta": {"aihub": marker},
        "access_grants": [],
    }


# -- retries with backoff ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "answer"),
    [
        ("/api/v1/models/create", httpx.Response(503, text="Service Unavailable")),
        ("/api/v1/models/create", httpx.Response(502, json={"detail": "bad gateway"})),
        ("/api/v1/functions/create", httpx.ConnectTimeout("connect timed out")),
        ("/api/v1/functions/id/aihub_feature_filter/toggle", httpx.ConnectError("connection refused")),
    ],
    ids=["503", "502", "connect-timeout", "connect-error"],
)
def test_transient_faults_on_writes_are_retried_with_backoff_and_the_sync_succeeds(
    capsys, fake: FakeOpenWebUI, sleeps: list[float], path: str, answer: Any
) -> None:
    fake.faults.append(fail(path, answer, times=2))
    code, out, _ = run(capsys, "sync", *SAMPLES)
    assert code == 0 and f"Applied: {SAMPLE_ADDS} added, 0 changed, 0 destroyed." in out
    assert sleeps == [0.5, 1.0]  # two retries, the delay doubling
    assert_converged(capsys, fake)


def test_a_409_version_conflict_on_an_update_is_retried(capsys, fake: FakeOpenWebUI, sleeps: list[float]) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    fake.models[SAMPLE_MODELS[1]]["name"] = "Edited by hand"
    conflict = httpx.Response(409, json={"detail": {"code": "version_conflict"}})
    fake.faults.append(fail("/api/v1/models/model/update", conflict, times=3))
    code, out, _ = run(capsys, "sync", *SAMPLES)
    assert code == 0 and "Applied: 0 added, 1 changed, 0 destroyed." in out
    assert count(fake, "/api/v1/models/model/update") == 4 and sleeps == [0.5, 1.0, 2.0]
    assert fake.models[SAMPLE_MODELS[1]]["name"] == "Policy FAQ"


# -- bounded retries, then exit 1 and a report of what was and was not applied -----------------


def test_a_write_failing_past_the_retries_exits_1_and_lists_applied_failed_and_not_attempted(
    capsys, fake: FakeOpenWebUI, sleeps: list[float]
) -> None:
    failing = "aihub_agent_pipe.research-assistant.default"
    locked = httpx.Response(500, json={"detail": "database is locked"})
    fake.faults.append(fail("/api/v1/models/create", locked, body_id=failing))
    code, out, err = run(capsys, "sync", *SAMPLES)
    assert code == 1
    assert out.startswith(f"Plan: {SAMPLE_ADDS} to add") and "Applied:" not in out
    assert count(fake, "/api/v1/models/create") == 2 + 4  # two models before it, then 1 try + 3 retries
    assert sleeps == [0.5, 1.0, 2.0]
    assert "Sync stopped part-way" in err and "Run `provision sync` again" in err
    assert "applied        create function aihub_feature_filter" in err
    assert f"applied        create model {SAMPLE_MODELS[1]}" in err
    assert f"FAILED         create model {failing}: Open WebUI answered 500 to POST /api/v1/models/create" in err
    assert "database is locked (server error after 4 attempts)" in err
    for model in SAMPLE_MODELS[3:]:
        assert f"not attempted  create model {model}" in err
    assert fake.registry_refreshes == 0

    fake.faults.clear()
    code, out, _ = run(capsys, "sync", *SAMPLES)
    assert code == 0 and out.startswith("Plan: 4 to add, 0 to change, 0 to destroy.")
    assert_converged(capsys, fake)


def test_the_json_report_of_a_partial_sync_accounts_for_every_change(capsys, fake: FakeOpenWebUI) -> None:
    failing = "aihub_agent_pipe.support-desk.billing"
    fake.faults.append(fail("/api/v1/models/create", httpx.ReadTimeout("read timed out"), body_id=failing))
    code, out, err = run(capsys, "sync", *SAMPLES, "-o", "json")
    assert code == 1
    document = json.loads(out)  # stdout is one JSON document, even on failure
    plan, result = document["plan"], document["result"]
    assert result["failed"] == [
        {
            "kind": "model",
            "id": failing,
            "action": "create",
            "error": "POST /api/v1/models/create timed out 4 times (ReadTimeout); is Open WebUI overloaded?",
        }
    ]
    assert result["not_attempted"] == [
        {"kind": "model", "id": model, "action": "create"} for model in SAMPLE_MODELS[4:]
    ]
    assert result["applied"] == {"add": SAMPLE_FUNCTIONS + 3, "change": 0, "destroy": 0}
    assert result["registry_refreshed"] is False
    applied = sum(result["applied"].values())
    assert applied + len(result["failed"]) + len(result["not_attempted"]) == len(plan["changes"])
    assert "timed out 4 times" in err

    fake.faults.clear()
    code, out, _ = run(capsys, "sync", *SAMPLES, "-o", "json")
    assert code == 0
    repaired = json.loads(out)
    assert [c["id"] for c in repaired["plan"]["changes"]] == SAMPLE_MODELS[3:]
    assert repaired["result"]["applied"] == {"add": 3, "change": 0, "destroy": 0}
    assert_converged(capsys, fake)


def test_a_409_that_persists_fails_clearly(capsys, fake: FakeOpenWebUI) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    fake.models[SAMPLE_MODELS[0]]["meta"]["capabilities"]["memory"] = True
    conflict = httpx.Response(409, json={"detail": {"code": "version_conflict"}})
    fake.faults.append(fail("/api/v1/models/model/update", conflict))
    code, _, err = run(capsys, "sync", *SAMPLES)
    assert code == 1
    assert count(fake, "/api/v1/models/model/update") == 4
    assert f"FAILED         update model {SAMPLE_MODELS[0]}: Open WebUI answered 409" in err
    assert "version_conflict" in err and "a concurrent write changed the object after 4 attempts" in err
    fake.faults.clear()
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    assert fake.models[SAMPLE_MODELS[0]]["meta"]["capabilities"]["memory"] is False


def test_a_registry_refresh_that_fails_still_reports_every_change_as_applied(capsys, fake: FakeOpenWebUI) -> None:
    fake.faults.append(fail("/api/models", httpx.Response(503)))
    code, out, err = run(capsys, "sync", *SAMPLES, "-o", "json")
    assert code == 1
    result = json.loads(out)["result"]
    assert result["applied"] == {"add": SAMPLE_ADDS, "change": 0, "destroy": 0}
    assert result["failed"] == [] and result["not_attempted"] == [] and result["registry_refreshed"] is False
    assert "Every change was applied, but refreshing Open WebUI's model registry failed" in err
    assert "GET /api/models" in err and "503" in err
    fake.faults.clear()
    assert_converged(capsys, fake)


# -- writes that landed although their answer was lost ----------------------------------------


@pytest.mark.parametrize("path", ["/api/v1/functions/create", "/api/v1/models/create"])
def test_a_create_whose_answer_was_lost_is_not_created_twice(capsys, fake: FakeOpenWebUI, path: str) -> None:
    lost: list[str] = []

    def lose_first(method: str, request_path: str, body: Any) -> bool:
        if request_path == path and not lost:
            lost.append(body["id"])
            return True
        return False

    fake.lost_answers.append(lose_first)
    code, out, _ = run(capsys, "sync", *SAMPLES)
    assert code == 0 and f"Applied: {SAMPLE_ADDS} added" in out
    assert count(fake, path) == (SAMPLE_FUNCTIONS if "functions" in path else 6) + 1  # one retry, answered "taken"
    assert_converged(capsys, fake)


def test_a_flip_whose_answer_was_lost_is_read_back_and_the_function_ends_active(capsys, fake: FakeOpenWebUI) -> None:
    toggle = "/api/v1/functions/id/aihub_feature_filter/toggle"
    lost = [1]

    def lose_once(method: str, path: str, body: Any) -> bool:
        if path == toggle and lost[0]:
            lost[0] -= 1
            return True
        return False

    fake.lost_answers.append(lose_once)
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    # flipped on (answer lost), flipped off by the client's retry, flipped on again after reading
    assert count(fake, toggle) == 3
    assert_converged(capsys, fake)


# -- two writers at once ---------------------------------------------------------------------


def test_a_flip_that_raced_another_writer_is_flipped_again(capsys, fake: FakeOpenWebUI) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    fake.functions["aihub_toggle_user_files"]["is_active"] = False
    fake.calls.clear()
    toggle = "/api/v1/functions/id/aihub_toggle_user_files/toggle"
    raced = [1]

    def other_sync_flips_first(method: str, path: str, body: Any) -> None:
        if path == toggle and raced[0]:  # the other sync read the same state and flipped first
            raced[0] -= 1
            fake.functions["aihub_toggle_user_files"]["is_active"] = True
        return None

    fake.faults.append(other_sync_flips_first)
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    assert count(fake, toggle) == 2
    assert_converged(capsys, fake)


def test_a_flag_that_keeps_being_flipped_back_is_an_error_not_applied(capsys, fake: FakeOpenWebUI) -> None:
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    fake.functions["aihub_toggle_user_files"]["is_active"] = False
    fake.calls.clear()
    toggle = "/api/v1/functions/id/aihub_toggle_user_files/toggle"

    def flips_back(method: str, path: str, body: Any) -> None:
        if path == toggle:
            function = fake.functions["aihub_toggle_user_files"]
            function["is_active"] = not function["is_active"]
        return None

    fake.faults.append(flips_back)
    code, _, err = run(capsys, "sync", *SAMPLES)
    assert code == 1
    assert count(fake, toggle) == 3
    assert "FAILED         update function aihub_toggle_user_files: is_active" in err
    assert "still False after 3 flips" in err
    fake.faults.clear()
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    assert_converged(capsys, fake)


def test_a_model_created_by_another_sync_since_the_plan_fails_clearly_and_overwrites_nothing(
    capsys, fake: FakeOpenWebUI
) -> None:
    taken = SAMPLE_MODELS[0]

    def other_sync_creates_first(method: str, path: str, body: Any) -> None:
        if path == "/api/v1/models/create" and body["id"] == taken and taken not in fake.models:
            fake.models[taken] = {**body, "name": "from the other sync", "access_grants": []}
        return None

    fake.faults.append(other_sync_creates_first)
    code, _, err = run(capsys, "sync", *SAMPLES)
    assert code == 1
    assert f"FAILED         create model {taken}: Open WebUI answered 401" in err
    assert ANOTHER_SYNC in err and "token was rejected" not in err
    assert fake.models[taken]["name"] == "from the other sync"
    fake.faults.clear()
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    assert_converged(capsys, fake)


def test_a_function_create_that_lost_the_race_inside_open_webui_names_the_race(capsys, fake: FakeOpenWebUI) -> None:
    """Both creates pass Open WebUI's id check; the loser's insert fails with a bare message."""
    racing = "aihub_feature_filter"

    def other_sync_inserts_first(method: str, path: str, body: Any) -> httpx.Response | None:
        if path == "/api/v1/functions/create" and body["id"] == racing and racing not in fake.functions:
            fake.functions[racing] = {**body, "is_active": True, "is_global": False, "valves": {}}
            return httpx.Response(400, json={"detail": "[ERROR: Error creating function]"})
        return None

    fake.faults.append(other_sync_inserts_first)
    code, _, err = run(capsys, "sync", *SAMPLES)
    assert code == 1
    assert f"FAILED         create function {racing}: Open WebUI answered 400" in err and ANOTHER_SYNC in err
    assert "not attempted  create function aihub_toggle_deep_research" in err
    fake.faults.clear()
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    assert_converged(capsys, fake)


def test_a_function_create_refused_for_another_reason_is_not_blamed_on_a_race(capsys, fake: FakeOpenWebUI) -> None:
    broken = httpx.Response(400, json={"detail": "[ERROR: Error creating function]"})  # e.g. a syntax error
    fake.faults.append(fail("/api/v1/functions/create", broken))
    code, _, err = run(capsys, "sync", *SAMPLES)
    assert code == 1 and "Error creating function" in err and ANOTHER_SYNC not in err


# -- listings that cannot be trusted prune nothing ----------------------------------------------


@pytest.fixture
def synced_with_orphan(capsys, fake: FakeOpenWebUI) -> FakeOpenWebUI:
    """The samples synced, plus a managed row whose blueprint is gone (what --prune deletes)."""
    assert run(capsys, "sync", *SAMPLES)[0] == 0
    fake.models[ORPHAN] = managed_orphan()
    fake.calls.clear()
    return fake


def truncated(path: str) -> Fault:
    body = b'[{"id": "aihub_agent_pipe.policy-faq.default", "meta": {"aih'
    return fail(path, httpx.Response(200, content=body, headers={"content-type": "application/json"}))


MODELS_ALL, FUNCTIONS_EXPORT = "/api/v1/models/all", "/api/v1/functions/export"
FAILED_LISTINGS: dict[str, tuple[Callable[[], Fault], str]] = {
    "models-5xx": (lambda: fail(MODELS_ALL, httpx.Response(500)), "answered 500 to GET /api/v1/models/all"),
    "functions-5xx": (
        lambda: fail(FUNCTIONS_EXPORT, httpx.Response(502)),
        "answered 502 to GET /api/v1/functions/export",
    ),
    "connection-drop": (lambda: fail(MODELS_ALL, httpx.RemoteProtocolError("peer closed")), "cannot reach Open WebUI"),
    "read-timeout": (lambda: fail(FUNCTIONS_EXPORT, httpx.ReadTimeout("slow")), "timed out 4 times"),
    "truncated-json": (lambda: truncated(MODELS_ALL), "answer is not JSON"),
    "a-page-object": (
        lambda: fail(MODELS_ALL, httpx.Response(200, json={"items": [], "total": 7})),
        "expected a JSON list",
    ),
    "not-objects": (
        lambda: fail(FUNCTIONS_EXPORT, httpx.Response(200, json=["aihub_feature_filter"])),
        "expected a JSON list",
    ),
}


@pytest.mark.parametrize("case", sorted(FAILED_LISTINGS))
def test_a_listing_that_fails_stops_before_any_write(capsys, synced_with_orphan: FakeOpenWebUI, case: str) -> None:
    fake = synced_with_orphan
    make_fault, message = FAILED_LISTINGS[case]
    fake.faults.append(make_fault())
    code, out, err = run(capsys, "sync", *SAMPLES, "--prune")
    assert code == 1 and out == "" and message in err
    assert fake.writes == [] and ORPHAN in fake.models
    fake.faults.clear()
    code, out, _ = run(capsys, "sync", *SAMPLES, "--prune")
    assert code == 0 and out.startswith("Plan: 0 to add, 0 to change, 1 to destroy.")
    assert_converged(capsys, fake)


def partial_listing(fake: FakeOpenWebUI, path: str, keep: Callable[[dict[str, Any]], bool]) -> Fault:
    """Answer `path` with only the rows `keep` accepts, as a page or a filtered view would."""

    def fault(method: str, request_path: str, body: Any) -> httpx.Response | None:
        if request_path != path:
            return None
        rows = fake.models if "models" in path else fake.functions
        return httpx.Response(200, json=[row for row in rows.values() if keep(row)])

    return fault


PARTIAL_LISTINGS: dict[str, tuple[str, Callable[[dict[str, Any]], bool]]] = {
    # the first rows only, the orphan among them (a page of a longer list)
    "a-page-of-models": (MODELS_ALL, lambda row: row["id"] in (ORPHAN, *SAMPLE_MODELS[:3])),
    # one blueprint's rows hidden (a view filtered by access or tag)
    "models-filtered": (MODELS_ALL, lambda row: ".support-desk." not in row["id"]),
    # what /api/v1/functions/export answers while ENABLE_FUNCTIONS is off
    "no-functions": (FUNCTIONS_EXPORT, lambda row: False),
}


@pytest.mark.parametrize("case", sorted(PARTIAL_LISTINGS))
def test_a_listing_missing_rows_that_exist_prunes_nothing_and_names_the_cause(
    capsys, synced_with_orphan: FakeOpenWebUI, case: str
) -> None:
    fake = synced_with_orphan
    path, keep = PARTIAL_LISTINGS[case]
    fake.faults.append(partial_listing(fake, path, keep))
    before = {ident: json.dumps(row, sort_keys=True) for ident, row in fake.models.items()}
    code, out, err = run(capsys, "sync", *SAMPLES, "--prune")
    assert code == 1
    assert "1 to destroy" in out  # the plan would prune the orphan it saw...
    assert "not attempted  delete model " + ORPHAN in err  # ...but stops at the first create
    assert ANOTHER_SYNC in err and "incomplete listing" in err
    assert not any("delete" in p for _, p in fake.writes)
    assert {ident: json.dumps(row, sort_keys=True) for ident, row in fake.models.items()} == before
    assert len(fake.functions) == SAMPLE_FUNCTIONS

    fake.faults.clear()
    code, out, _ = run(capsys, "sync", *SAMPLES, "--prune")
    assert code == 0 and out.startswith("Plan: 0 to add, 0 to change, 1 to destroy.")
    assert_converged(capsys, fake)


def test_a_listing_that_hides_the_ownership_marker_writes_nothing(capsys, synced_with_orphan: FakeOpenWebUI) -> None:
    """A view that strips `meta` makes our rows look foreign: refuse, never overwrite or prune."""
    fake = synced_with_orphan

    def stripped(method: str, path: str, body: Any) -> httpx.Response | None:
        if path != "/api/v1/models/all":
            return None
        return httpx.Response(200, json=[{**row, "meta": {}} for row in fake.models.values()])

    fake.faults.append(stripped)
    code, _, err = run(capsys, "sync", *SAMPLES, "--prune")
    assert code == 1 and "not managed by provision" in err
    assert fake.writes == [] and ORPHAN in fake.models
