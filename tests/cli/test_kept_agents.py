"""An agent kept without --prune keeps being served by the pipe (issue 8 point 2)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.builders import REPO, blueprint, write_blueprint_dir
from tests.support.fake_owui import FakeOpenWebUI, fake_instance_for_cli
from tests.support.run_cli import run_cli

TOKEN = "sk-kept-test-token-0123456789"
BUNDLE = ["--bundle", str(REPO / "owui_functions")]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenWebUI]:
    monkeypatch.setenv("OLD_KEY", "old-secret-value-123456")
    with fake_instance_for_cli(monkeypatch, TOKEN) as server:
        yield server


run = functools.partial(run_cli, secrets=(TOKEN,))


def agents_valve(fake: FakeOpenWebUI) -> dict[str, dict]:
    return {e["id"]: e for e in json.loads(fake.functions["aihub_agent_pipe"]["valves"]["AGENTS"])}


def keys_valve(fake: FakeOpenWebUI) -> dict[str, str]:
    return json.loads(fake.functions["aihub_agent_pipe"]["valves"]["API_KEYS"])


def two_blueprints(root: Path) -> Path:
    old = blueprint("old", backend={"url": "http://127.0.0.1:8700/old", "api_key_env": "OLD_KEY"})
    return write_blueprint_dir(root, [blueprint("live"), old])


def test_a_kept_agent_stays_in_the_pipe_with_its_last_backend_and_key(capsys, fake, tmp_path: Path) -> None:
    root = two_blueprints(tmp_path / "bp")
    assert run(capsys, "sync", "-p", str(root), *BUNDLE)[0] == 0
    before = agents_valve(fake)["old.default"]
    (root / "old.yaml").unlink()

    code, out, err = run(capsys, "diff", "-p", str(root), *BUNDLE)
    assert code == 0 and "No changes." in out  # the valve already holds the kept agent
    assert (
        "model aihub_agent_pipe.old.default  (kept and still served by the pipe from http://127.0.0.1:8700/old" in err
    )
    assert "until --prune" in err

    # The environment no longer needs the key: the kept agent's secret comes from the valve.
    code, out, err = run(capsys, "sync", "-p", str(root), *BUNDLE, "-o", "json")
    assert code == 0
    assert json.loads(out)["plan"]["orphans"] == [
        {
            "kind": "model",
            "id": "aihub_agent_pipe.old.default",
            "note": "kept and still served by the pipe from http://127.0.0.1:8700/old (its last backend) until --prune",
        }
    ]
    assert agents_valve(fake)["old.default"] == before
    assert keys_valve(fake) == {"OLD_KEY": "old-secret-value-123456"}
    assert "aihub_agent_pipe.old.default" in fake.models


def test_prune_drops_the_row_and_its_pipe_entry_and_key(capsys, fake, tmp_path: Path) -> None:
    root = two_blueprints(tmp_path / "bp")
    assert run(capsys, "sync", "-p", str(root), *BUNDLE)[0] == 0
    (root / "old.yaml").unlink()
    code, out, err = run(capsys, "sync", "-p", str(root), *BUNDLE, "--prune")
    assert code == 0, out + err
    assert "aihub_agent_pipe.old.default" not in fake.models
    assert set(agents_valve(fake)) == {"live.default"}
    assert keys_valve(fake) == {}


def test_a_kept_row_the_pipe_has_no_entry_for_is_named_as_not_answering(capsys, fake, tmp_path: Path) -> None:
    root = two_blueprints(tmp_path / "bp")
    assert run(capsys, "sync", "-p", str(root), *BUNDLE)[0] == 0
    valves = fake.functions["aihub_agent_pipe"]["valves"]
    valves["AGENTS"] = json.dumps([e for e in json.loads(valves["AGENTS"]) if e["id"] != "old.default"])
    (root / "old.yaml").unlink()
    code, out, err = run(capsys, "diff", "-p", str(root), *BUNDLE)
    assert code == 0 and "aihub_agent_pipe.old.default" not in out
    assert (
        "aihub_agent_pipe.old.default  (kept, but the pipe has no backend for it: its chats fail until --prune" in err
    )


def test_a_kept_agent_never_shows_its_key_in_a_plan(capsys, fake, tmp_path: Path) -> None:
    root = two_blueprints(tmp_path / "bp")
    assert run(capsys, "sync", "-p", str(root), *BUNDLE)[0] == 0
    (root / "old.yaml").unlink()
    (root / "live.yaml").write_text((root / "live.yaml").read_text().replace("name: Live agent", "name: Renamed"))
    code, out, err = run(capsys, "diff", "-p", str(root), *BUNDLE, "-o", "json")
    assert code == 0 and "old-secret-value-123456" not in out + err


def test_keeping_an_agent_from_the_middle_of_the_valve_writes_nothing(capsys, fake, tmp_path: Path) -> None:
    root = write_blueprint_dir(tmp_path / "bp", [blueprint("a"), blueprint("m"), blueprint("z")])
    assert run(capsys, "sync", "-p", str(root), *BUNDLE)[0] == 0
    (root / "m.yaml").unlink()
    code, out, err = run(capsys, "diff", "-p", str(root), *BUNDLE)
    assert code == 0 and "No changes." in out, out
    assert list(agents_valve(fake)) == ["a.default", "m.default", "z.default"]


def test_list_says_whether_the_pipe_serves_each_agent(capsys, fake, tmp_path: Path) -> None:
    root = two_blueprints(tmp_path / "bp")
    assert run(capsys, "sync", "-p", str(root), *BUNDLE)[0] == 0
    (root / "old.yaml").unlink()
    assert run(capsys, "sync", "-p", str(root), *BUNDLE)[0] == 0
    code, out, _ = run(capsys, "list", "-o", "json")
    assert {a["agent"]: a["served"] for a in json.loads(out)["agents"]} == {"live.default": True, "old.default": True}
    valves = fake.functions["aihub_agent_pipe"]["valves"]
    valves["AGENTS"] = json.dumps([e for e in json.loads(valves["AGENTS"]) if e["id"] != "old.default"])
    code, out, _ = run(capsys, "list", "-o", "json")
    assert {a["agent"]: a["served"] for a in json.loads(out)["agents"]} == {"live.default": True, "old.default": False}
    code, out, _ = run(capsys, "list")
    assert code == 0 and "NO: chats fail" in out


def test_a_kept_agent_whose_key_the_server_reads_gets_no_secret_written(
    capsys, fake, tmp_path: Path, monkeypatch
) -> None:
    old = blueprint(
        "old", backend={"url": "http://127.0.0.1:8700/old", "api_key_env": "OLD_KEY", "api_key_from": "server"}
    )
    root = write_blueprint_dir(tmp_path / "bp", [blueprint("live"), old])
    assert run(capsys, "sync", "-p", str(root), *BUNDLE)[0] == 0
    (root / "old.yaml").unlink()
    assert run(capsys, "sync", "-p", str(root), *BUNDLE)[0] == 0
    assert agents_valve(fake)["old.default"]["key_from"] == "server"
    assert keys_valve(fake) == {}


def test_a_kept_agent_written_by_an_older_provision_without_key_from_keeps_its_key(
    capsys, fake, tmp_path: Path, monkeypatch
) -> None:
    """Provision before `api_key_from` wrote entries without `key_from`: such a key was synced."""
    root = two_blueprints(tmp_path / "bp")
    assert run(capsys, "sync", "-p", str(root), *BUNDLE)[0] == 0
    valves = fake.functions["aihub_agent_pipe"]["valves"]
    entries = json.loads(valves["AGENTS"])
    for entry in entries:
        entry.pop("key_from", None)
    valves["AGENTS"] = json.dumps(entries)
    (root / "old.yaml").unlink()
    monkeypatch.delenv("OLD_KEY")  # only the valve still holds it
    assert run(capsys, "sync", "-p", str(root), *BUNDLE)[0] == 0
    assert keys_valve(fake) == {"OLD_KEY": "old-secret-value-123456"}
    assert agents_valve(fake)["old.default"]["api_key"] == "OLD_KEY"
