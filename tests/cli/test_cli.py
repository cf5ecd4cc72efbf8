"""The CLI: exit codes, output streams, plan forms, and the token kept out of every output."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import httpx
import pytest
import yaml

from tests.support.builders import REPO, blueprint, write_blueprint_dir, write_function_dir
from tests.support.fake_owui import FakeOpenWebUI
from tests.support.run_cli import run_cli

TOKEN = "sk-cli-test-token-0123456789"
SAMPLES = ["-p", str(REPO / "blueprints"), "--bundle", str(REPO / "owui_functions")]


run = functools.partial(run_cli, secrets=(TOKEN,))


def test_validate_samples_offline(capsys) -> None:
    code, out, _ = run(capsys, "validate", *SAMPLES)
    assert code == 0 and out.startswith("Valid: 4 blueprints, 6 agents")


def test_validate_reports_every_problem_with_file_and_line(capsys, tmp_path: Path) -> None:
    root = write_blueprint_dir(tmp_path / "bp", [blueprint("demo", calls=["nope"])])
    code, out, err = run(capsys, "validate", "-p", str(root), "--bundle", str(REPO / "owui_functions"))
    assert code == 1 and out == ""
    assert f"{root / 'demo.yaml'}:" in err and "steps[0].calls[0]: unknown capability 'nope'" in err


def test_toggle_filters_are_rendered_not_read_from_disk(capsys, tmp_path: Path) -> None:
    """No generated file is needed: validate passes with a bundle of only the feature filter."""
    root = write_blueprint_dir(tmp_path / "bp")
    bundle = write_function_dir(tmp_path / "fn", root)
    assert not list(bundle.glob("aihub_toggle_*.py"))
    code, out, _ = run(capsys, "validate", "-p", str(root), "--bundle", str(bundle), "-o", "json")
    assert code == 0 and json.loads(out)["functions"] == 2  # the feature filter + the user_files toggle


def test_generate_writes_what_sync_renders(capsys, tmp_path: Path) -> None:
    from provisioner.loader import load_catalog
    from provisioner.toggle_filters import rendered_toggle_functions

    root = write_blueprint_dir(tmp_path / "bp")
    out_dir = tmp_path / "out"
    code, out, _ = run(capsys, "generate", "-p", str(root), "--out", str(out_dir))
    assert code == 0 and "created" in out
    rendered = {f.id: f.content for f in rendered_toggle_functions(load_catalog(root))}
    assert {p.stem: p.read_text() for p in out_dir.glob("*.py")} == rendered
    assert run(capsys, "generate", "-p", str(root), "--out", str(out_dir))[1].startswith(
        "Toggle filters are up to date"
    )


def test_usage_errors_exit_1_not_2(capsys) -> None:
    code, _, err = run(capsys, "diff", "--no-such-flag")
    assert code == 1 and "No such option" in err


def test_diff_exit_codes(capsys, fake: FakeOpenWebUI) -> None:
    assert run(capsys, "diff", *SAMPLES)[0] == 0
    code, out, _ = run(capsys, "diff", *SAMPLES, "--detailed-exitcode")
    assert code == 2 and out.startswith("Plan: ")
    assert fake.writes == []


def test_diff_json_plan(capsys, fake: FakeOpenWebUI) -> None:
    code, out, _ = run(capsys, "diff", *SAMPLES, "-o", "json")
    plan = json.loads(out)
    features = yaml.safe_load((REPO / "blueprints" / "features.yaml").read_text())["features"]
    native_in_samples = 3  # web_search, code_interpreter, image_generation: served by toggle filters too
    functions = len(list((REPO / "owui_functions").glob("*.py"))) + len(features) + native_in_samples
    assert code == 0 and plan["summary"] == {"add": 6 + functions, "change": 0, "destroy": 0}
    assert {c["action"] for c in plan["changes"]} == {"create"}


def test_sync_twice_second_writes_nothing(capsys, fake: FakeOpenWebUI) -> None:
    code, out, _ = run(capsys, "sync", *SAMPLES)
    assert code == 0 and "Applied: " in out
    fake.calls.clear()
    code, out, _ = run(capsys, "sync", *SAMPLES)
    assert code == 0 and "No changes." in out
    assert fake.writes == []
    assert [p for _, p in fake.calls] == ["/api/version", "/api/v1/models/all", "/api/v1/functions/export"]


def test_hand_edit_shows_as_exactly_that_field_and_sync_reverts_it(capsys, fake: FakeOpenWebUI) -> None:
    run(capsys, "sync", *SAMPLES)
    row = fake.models["aihub_agent_pipe.policy-faq.default"]
    row["meta"]["capabilities"]["web_search"] = True
    row["params"] = {"temperature": 0.1}
    code, out, _ = run(capsys, "diff", *SAMPLES, "-o", "json", "--detailed-exitcode")
    plan = json.loads(out)
    assert code == 2
    assert plan["changes"] == [
        {
            "kind": "model",
            "id": "aihub_agent_pipe.policy-faq.default",
            "action": "update",
            "fields": [{"path": "meta.capabilities.web_search", "before": True, "after": False, "origin": "openwebui"}],
        }
    ]
    run(capsys, "sync", *SAMPLES)
    assert fake.models["aihub_agent_pipe.policy-faq.default"]["meta"]["capabilities"]["web_search"] is False
    assert fake.models["aihub_agent_pipe.policy-faq.default"]["params"] == {"temperature": 0.1}


def test_sync_dry_run_is_diff(capsys, fake: FakeOpenWebUI) -> None:
    code, out, _ = run(capsys, "sync", *SAMPLES, "--dry-run", "--detailed-exitcode")
    assert code == 2 and out.startswith("Plan: ") and fake.writes == []


def test_prune_against_an_empty_blueprint_dir_deletes_nothing(capsys, fake: FakeOpenWebUI, tmp_path: Path) -> None:
    run(capsys, "sync", *SAMPLES)
    empty = write_blueprint_dir(tmp_path / "bp", [])
    code, _, err = run(capsys, "sync", "-p", str(empty), "--bundle", str(REPO / "owui_functions"), "--prune")
    assert code == 1 and "no blueprint files" in err
    assert len(fake.models) == 6


def test_unmanaged_row_with_our_id_is_left_alone(capsys, fake: FakeOpenWebUI) -> None:
    fake.models["aihub_agent_pipe.policy-faq.default"] = {
        "id": "aihub_agent_pipe.policy-faq.default",
        "name": "Hand made",
        "meta": {},
        "params": {},
    }
    code, _, err = run(capsys, "sync", *SAMPLES)
    assert code == 1 and "not managed by provision" in err and "--adopt" in err
    assert fake.models["aihub_agent_pipe.policy-faq.default"]["name"] == "Hand made"
    assert fake.writes == []
    code, _, _ = run(capsys, "sync", *SAMPLES, "--adopt", "model/aihub_agent_pipe.policy-faq.default")
    assert code == 0 and fake.models["aihub_agent_pipe.policy-faq.default"]["name"] == "Policy FAQ"


def test_missing_url_and_token_are_clear_errors(capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENWEBUI_URL", raising=False)
    monkeypatch.delenv("OPENWEBUI_TOKEN", raising=False)
    code, _, err = run(capsys, "diff", *SAMPLES)
    assert code == 1 and "no Open WebUI URL" in err
    code, _, err = run(capsys, "diff", *SAMPLES, "--url", "http://127.0.0.1:9")
    assert code == 1 and "no token" in err


def test_token_file_is_read_and_never_echoed(
    capsys, fake: FakeOpenWebUI, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("OPENWEBUI_TOKEN")
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    code, _, _ = run(capsys, "diff", *SAMPLES, "--token-file", str(token_file))
    assert code == 0
    monkeypatch.setenv("OPENWEBUI_TOKEN", TOKEN)
    code, _, err = run(capsys, "diff", *SAMPLES, "--token-file", str(token_file))
    assert code == 1 and "use one" in err


def test_rejected_token_is_reported_without_the_token(capsys, fake: FakeOpenWebUI) -> None:
    # the server echoes the token it refused; run() fails the test if it reaches any output
    fake.faults.append(lambda m, p, b: httpx.Response(401, json={"detail": f"bad token {TOKEN}"}))
    code, _, err = run(capsys, "diff", *SAMPLES)
    assert code == 1 and "token was rejected" in err and "bad token" in err


def test_plain_http_to_remote_host_is_refused(capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENWEBUI_TOKEN", TOKEN)
    code, _, err = run(capsys, "diff", *SAMPLES, "--url", "http://chat.example.com")
    assert code == 1 and "refusing plain HTTP" in err


def test_old_server_version_warns_but_continues(capsys, fake: FakeOpenWebUI) -> None:
    fake.version = "0.6.30"
    code, _, err = run(capsys, "diff", *SAMPLES)
    assert code == 0 and "outside the tested range" in err


def test_a_release_too_old_to_read_is_refused_before_anything_is_written(capsys, fake: FakeOpenWebUI) -> None:
    fake.version = "0.6.26"  # lists functions without their valves: a sync would make new keys
    code, out, err = run(capsys, "sync", *SAMPLES, "--yes")
    assert code == 1 and out == ""
    assert "Open WebUI 0.6.26 is not supported: provision needs 0.6.27 or later" in err
    assert fake.models == {} and fake.functions == {}


def test_validate_json_lists_the_problems_on_stdout(capsys, tmp_path: Path) -> None:
    root = write_blueprint_dir(tmp_path / "bp", [blueprint("demo", calls=["nope"])])
    code, out, err = run(capsys, "validate", "-p", str(root), "--bundle", str(REPO / "owui_functions"), "-o", "json")
    data = json.loads(out)
    assert code == 1 and data["valid"] is False
    [problem] = data["problems"]
    assert problem["file"].endswith("demo.yaml") and problem["field"] == "steps[0].calls[0]"
    assert isinstance(problem["line"], int) and "unknown capability 'nope'" in problem["message"]
    assert "unknown capability" in err
