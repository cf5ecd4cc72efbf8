"""The agent pipe's valves come from the blueprints; the backend's API key from the environment."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
import respx

from provisioner.blueprints import Backend, BackendOverride, agent_backend
from provisioner.desired import build_desired
from provisioner.errors import BlueprintError
from provisioner.function_files import load_function_files
from provisioner.loader import load_catalog
from tests.support.builders import REPO, blueprint, write_blueprint_dir, write_function_dir
from tests.support.fake_owui import FakeOpenWebUI
from tests.support.run_cli import run_cli

PIPE = REPO / "owui_functions" / "aihub_agent_pipe.py"
SECRET = "sk-backend-secret-value-42"
run = functools.partial(run_cli, secrets=(SECRET,))  # every CLI run here is checked for it


@pytest.fixture
def keyed(tmp_path: Path) -> Path:
    bp = blueprint(
        "desk",
        calls=["web_research"],
        agents=[
            {"id": "a", "name": "A", "access": "public"},
            {"id": "b", "name": "B", "backend": {"transport": "openai", "url": "http://127.0.0.1:8701/v1"}},
        ],
    )
    bp["backend"]["api_key_env"] = "DESK_KEY"
    root = write_blueprint_dir(tmp_path / "bp", [bp])
    write_function_dir(tmp_path / "fn", root, PIPE)
    return root


def pipe_fields(root: Path, env: dict[str, str] | None):
    functions = (
        load_function_files(root.parent / "fn")
        if (root.parent / "fn").exists()
        else load_function_files(REPO / "owui_functions")
    )
    state = build_desired(load_catalog(root), functions, groups={}, env=env)
    return state.functions["aihub_agent_pipe"]


def test_agents_valve_lists_every_agent_with_its_backend(keyed: Path) -> None:
    pipe = pipe_fields(keyed, {"DESK_KEY": SECRET})
    agents = json.loads(pipe.fields["valves.AGENTS"])
    assert agents == [
        {
            "id": "desk.a",
            "name": "A",
            "transport": "agui",
            "url": "http://127.0.0.1:8700/desk",
            "model": None,
            "api_key": "DESK_KEY",
            "key_from": "sync",
            "features": ["web_search"],
            "reads": [],
            "identity": "auto",
            "oauth_token_header": None,
        },
        {
            "id": "desk.b",
            "name": "B",
            "transport": "openai",
            "url": "http://127.0.0.1:8701/v1",
            "model": "desk.b",
            "api_key": "DESK_KEY",
            "key_from": "sync",
            "features": ["web_search"],
            "reads": [],
            "identity": "auto",
            "oauth_token_header": None,
        },
    ]
    assert json.loads(pipe.fields["valves.API_KEYS"]) == {"DESK_KEY": SECRET}
    assert pipe.sensitive == {"valves.API_KEYS", "valves.HISTORY_SIGNING_KEY", "valves.IDENTITY_KEYS"}
    assert "valves.HISTORY_SIGNING_KEY" not in pipe.fields  # offline: no key given, none planned
    assert "valves.IDENTITY_KEYS" not in pipe.fields


def test_missing_key_variable_is_an_error_naming_the_field(keyed: Path) -> None:
    with pytest.raises(BlueprintError) as info:
        pipe_fields(keyed, {})
    [problem] = info.value.problems
    assert problem.file.endswith("desk.yaml") and problem.field == "backend.api_key_env"
    assert "environment variable DESK_KEY is not set" in problem.message


def test_validate_does_not_need_the_secret(keyed: Path) -> None:
    assert json.loads(pipe_fields(keyed, None).fields["valves.API_KEYS"]) == {}


def test_agent_without_any_backend_is_an_error(tmp_path: Path) -> None:
    bp = blueprint("nobackend")
    del bp["backend"]
    root = write_blueprint_dir(tmp_path / "bp", [bp])
    with pytest.raises(BlueprintError, match="no backend"):
        pipe_fields(root, {})


def test_an_agents_override_lays_only_what_it_sets_over_the_blueprints_backend() -> None:
    base = Backend(url="http://10.0.0.1/desk", api_key_env="DESK_KEY", api_key_from="server", insecure=True)
    assert agent_backend(base, BackendOverride(transport="openai", insecure=False)) == {
        "transport": "openai",
        "url": "http://10.0.0.1/desk",
        "model": None,
        "api_key_env": "DESK_KEY",
        "api_key_from": "server",
        "insecure": False,  # False is set, not absent
        "identity": "auto",
        "oauth_token_header": None,
    }
    assert agent_backend(base, None) == base.model_dump()
    assert agent_backend(None, BackendOverride(url="https://a.example/x")) == {
        "transport": "agui",
        "url": "https://a.example/x",
        "model": None,
        "api_key_env": None,
        "api_key_from": "sync",
        "insecure": False,  # the Backend model's defaults
        "identity": "auto",
        "oauth_token_header": None,
    }
    assert agent_backend(None, None)["url"] is None  # no backend at all: the loader reports it


def test_secret_never_appears_in_diff_or_sync_output(keyed: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeOpenWebUI()
    monkeypatch.setenv("OPENWEBUI_URL", server.base_url)
    monkeypatch.setenv("OPENWEBUI_TOKEN", "sk-admin")
    monkeypatch.setenv("DESK_KEY", SECRET)
    args = ["-p", str(keyed), "--bundle", str(keyed.parent / "fn")]
    with respx.mock(assert_all_called=False) as router:
        server.mount(router)
        for command in (["diff"], ["diff", "-o", "json"], ["sync"]):  # each run checked for SECRET
            assert run(capsys, *command, *args)[0] == 0
        assert json.loads(server.functions["aihub_agent_pipe"]["valves"]["API_KEYS"]) == {"DESK_KEY": SECRET}
        monkeypatch.setenv("DESK_KEY", SECRET + "-rotated")  # starts with SECRET: run's check covers it
        code, rotated, _ = run(capsys, "diff", "-o", "json", *args)
        assert code == 0
        assert run(capsys, "sync", "-o", "json", *args)[0] == 0
    [change] = json.loads(rotated)["changes"]
    assert change["fields"] == [{"path": "valves.API_KEYS", "before": "(sensitive)", "after": "(sensitive)"}]


def test_secret_echoed_by_a_server_error_is_redacted(keyed: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx

    server = FakeOpenWebUI()
    server.faults.append(
        lambda m, p, b: (
            httpx.Response(400, json={"detail": f"bad valves: {b}"}) if p.endswith("/valves/update") else None
        )
    )
    monkeypatch.setenv("OPENWEBUI_URL", server.base_url)
    monkeypatch.setenv("OPENWEBUI_TOKEN", "sk-admin")
    monkeypatch.setenv("DESK_KEY", SECRET)
    with respx.mock(assert_all_called=False) as router:
        server.mount(router)
        code, _, err = run(capsys, "sync", "-p", str(keyed), "--bundle", str(keyed.parent / "fn"))
    assert code == 1 and "bad valves" in err  # and, as every run, without SECRET


# --- the history signing key: written once, kept, never shown ---------------------------------------


def _signing_run(keyed: Path, capsys, monkeypatch: pytest.MonkeyPatch, server: FakeOpenWebUI, *command: str):
    monkeypatch.setenv("OPENWEBUI_URL", server.base_url)
    monkeypatch.setenv("OPENWEBUI_TOKEN", "sk-admin")
    monkeypatch.setenv("DESK_KEY", SECRET)
    options = [c for c in command if c == "-v"]
    command = tuple(c for c in command if c != "-v")
    with respx.mock(assert_all_called=False) as router:
        server.mount(router)
        return run(capsys, *options, *command, "-p", str(keyed), "--bundle", str(keyed.parent / "fn"))


def test_sync_writes_a_random_signing_key_once_and_never_prints_it(
    keyed: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = FakeOpenWebUI()
    code, out, err = _signing_run(keyed, capsys, monkeypatch, server, "diff", "-o", "json")
    assert code == 0
    printed = [out + err]
    pipe_change = next(c for c in json.loads(out)["changes"] if c["id"] == "aihub_agent_pipe")
    assert {"path": "valves.HISTORY_SIGNING_KEY", "before": None, "after": "(sensitive)"} in pipe_change["fields"]
    code, out, err = _signing_run(keyed, capsys, monkeypatch, server, "-v", "sync")
    printed.append(out + err)
    assert "POST /api/v1/functions/id/aihub_agent_pipe/valves/update -> 200" in err  # -v logged the write
    key = server.functions["aihub_agent_pipe"]["valves"]["HISTORY_SIGNING_KEY"]
    assert code == 0 and len(key) >= 32
    code, out, err = _signing_run(keyed, capsys, monkeypatch, server, "diff", "--detailed-exitcode")
    printed.append(out + err)
    assert code == 0, out  # kept: a normal sync never rotates it
    code, _, _ = _signing_run(keyed, capsys, monkeypatch, server, "sync")
    assert server.functions["aihub_agent_pipe"]["valves"]["HISTORY_SIGNING_KEY"] == key
    for output in printed:
        assert key not in output and key[:8] not in output


def test_an_existing_signing_key_is_kept_and_a_missing_one_is_written(
    keyed: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = FakeOpenWebUI()
    assert _signing_run(keyed, capsys, monkeypatch, server, "sync")[0] == 0
    valves = server.functions["aihub_agent_pipe"]["valves"]
    valves["HISTORY_SIGNING_KEY"] = "an-admins-own-key-that-is-long-enough-0123"
    assert _signing_run(keyed, capsys, monkeypatch, server, "sync")[0] == 0
    assert server.functions["aihub_agent_pipe"]["valves"]["HISTORY_SIGNING_KEY"] == (
        "an-admins-own-key-that-is-long-enough-0123"
    )
    del server.functions["aihub_agent_pipe"]["valves"]["HISTORY_SIGNING_KEY"]  # an admin cleared it
    code, out, err = _signing_run(keyed, capsys, monkeypatch, server, "sync")
    fresh = server.functions["aihub_agent_pipe"]["valves"]["HISTORY_SIGNING_KEY"]
    assert code == 0 and len(fresh) >= 32 and fresh not in out + err
    assert "valves.HISTORY_SIGNING_KEY" in out and "(sensitive)" in out


def test_two_instances_get_different_signing_keys(keyed: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = set()
    for _ in range(2):
        server = FakeOpenWebUI()
        assert _signing_run(keyed, capsys, monkeypatch, server, "sync")[0] == 0
        keys.add(server.functions["aihub_agent_pipe"]["valves"]["HISTORY_SIGNING_KEY"])
    assert len(keys) == 2
