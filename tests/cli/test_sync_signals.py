"""SIGINT/SIGTERM during `sync`: the write in flight finishes, nothing new starts, the partial
report is printed (`-o json` still prints {plan, result}) and the exit code says which signal.

The signal is sent to this very process by the fake instance while it answers a write, so it
arrives exactly mid-apply; tests/e2e/test_interrupted_sync_e2e.py sends it to a real `provision`.
"""

from __future__ import annotations

import json
import os
import signal

import pytest

from provisioner.render_markdown import result_markdown
from tests.support.builders import REPO
from tests.support.fake_owui import FakeOpenWebUI
from tests.support.run_cli import run_cli as run

TOKEN = "sk-sync-signals-test-0123456789"
SAMPLES = ["-p", str(REPO / "blueprints"), "--bundle", str(REPO / "owui_functions")]
CREATE = "/api/v1/models/create"


def signal_on_model_create(fake: FakeOpenWebUI, signum: int, nth: int = 1) -> list[str]:
    """Send `signum` to this process while the fake handles the nth model create; return the ids
    of every model create the fake received (the one in flight included)."""
    creates: list[str] = []

    def fault(method: str, path: str, body: dict) -> None:
        if path == CREATE:
            creates.append(body["id"])
            if len(creates) == nth:
                os.kill(os.getpid(), signum)
        return None

    fake.faults.append(fault)
    return creates


def test_sigterm_mid_sync_finishes_the_write_in_flight_and_prints_the_json_report(fake: FakeOpenWebUI, capsys) -> None:
    creates = signal_on_model_create(fake, signal.SIGTERM, nth=2)
    code, out, err = run(capsys, "sync", *SAMPLES, "--yes", "-o", "json")
    assert code == 143
    data = json.loads(out)
    assert set(data) == {"plan", "result"}
    result = data["result"]
    assert result["stopped_by"] == "SIGTERM" and result["failed"] == []
    applied_models = [c["id"] for c in result["applied_changes"] if c["kind"] == "model"]
    assert applied_models == creates and len(creates) == 2  # the second was in flight: finished
    assert set(fake.models) == set(creates)
    planned = {c["id"] for c in data["plan"]["changes"]}
    assert {c["id"] for c in result["not_attempted"]} == planned - {c["id"] for c in result["applied_changes"]}
    assert result["not_attempted"] and result["registry_refreshed"] is False
    assert "SIGTERM: stopping after the write in flight" in err
    assert "Sync stopped part-way by SIGTERM" in err
    fake.faults.clear()  # the next sync finishes the job
    assert run(capsys, "sync", *SAMPLES, "--yes")[0] == 0
    assert run(capsys, "diff", *SAMPLES, "--detailed-exitcode")[0] == 0


def test_sigint_mid_sync_lists_what_was_done_and_not_done(fake: FakeOpenWebUI, capsys) -> None:
    creates = signal_on_model_create(fake, signal.SIGINT)
    before = signal.getsignal(signal.SIGINT)  # SIG_IGN, not Python's default, under `nohup` or `cmd &`
    code, out, err = run(capsys, "sync", *SAMPLES, "--yes")
    assert code == 130
    assert "Applied:" not in out
    assert f"  applied        create model {creates[0]}" in err
    not_attempted = [line for line in err.splitlines() if line.startswith("  not attempted  create model ")]
    assert len(not_attempted) == 5 and len(creates) == 1  # the six sample agents, one written
    assert signal.getsignal(signal.SIGINT) is before  # handlers restored


def test_a_stop_in_a_parallel_sync_starts_nothing_new(fake: FakeOpenWebUI, capsys) -> None:
    creates = signal_on_model_create(fake, signal.SIGTERM)
    code, out, _ = run(capsys, "sync", *SAMPLES, "--yes", "--parallelism", "2", "-o", "json")
    assert code == 143
    result = json.loads(out)["result"]
    assert len(creates) <= 2  # the two already under way; none started after the signal
    assert sorted(c["id"] for c in result["applied_changes"] if c["kind"] == "model") == sorted(creates)
    assert len(result["not_attempted"]) == 6 - len(creates)
    fake.faults.clear()
    assert run(capsys, "sync", *SAMPLES, "--yes", "--parallelism", "2")[0] == 0
    assert len(fake.models) == 6 and run(capsys, "diff", *SAMPLES, "--detailed-exitcode")[0] == 0


def test_markdown_result_says_it_was_stopped(fake: FakeOpenWebUI, capsys) -> None:
    signal_on_model_create(fake, signal.SIGTERM)
    code, out, _ = run(capsys, "sync", *SAMPLES, "--yes", "-o", "markdown")
    assert code == 143
    assert "Stopped part-way by `SIGTERM`: run `provision sync` again to finish." in out
    assert out.count("- not attempted: model ") == 5


def test_a_signal_after_the_last_write_changes_nothing(fake: FakeOpenWebUI, capsys) -> None:
    """Nothing was left to start: the sync finished, so it says so and exits 0."""
    signal_on_model_create(fake, signal.SIGTERM, nth=6)
    code, out, err = run(capsys, "sync", *SAMPLES, "--yes", "-o", "json")
    assert code == 0, err
    result = json.loads(out)["result"]
    assert "stopped_by" not in result and result["not_attempted"] == [] and result["registry_refreshed"] is True


@pytest.mark.parametrize("stopped_by", ["", "SIGINT"])
def test_result_markdown_mentions_a_stop_only_when_there_was_one(stopped_by: str) -> None:
    result = {
        "applied": {"add": 0, "change": 0, "destroy": 0},
        "failed": [],
        "not_attempted": [],
        **({"stopped_by": stopped_by} if stopped_by else {}),
    }
    assert ("Stopped part-way" in result_markdown(result)) is bool(stopped_by)
