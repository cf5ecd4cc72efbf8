"""Issue 9, the provisioner's side: what a hostile or careless blueprint set cannot do.

The bad-input corpus (tests/data/bad_blueprints) holds each refused file with its exact error;
these tests cover what a corpus case cannot: a variable holding the token under another name,
keys read by the Open WebUI server, `insecure: true` shown in the plan, hidden characters escaped
in text plans, files in the blueprint directory that are not read, and `-v`.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import httpx
import pytest

from provisioner.desired import build_desired
from provisioner.errors import BlueprintError
from provisioner.function_files import load_function_files
from provisioner.loader import load_catalog
from provisioner.text import visible
from provisioner.urls import credential_in_url, plain_http_host
from tests.support.builders import REPO, blueprint, write_blueprint_dir, write_function_dir
from tests.support.fake_owui import FakeOpenWebUI
from tests.support.run_cli import run_cli

TOKEN = "sk-admin-token-9f8e7d6c5b4a"
KEY = "bk-backend-key-1a2b3c4d5e"
PIPE = REPO / "owui_functions" / "aihub_agent_pipe.py"


run = functools.partial(run_cli, secrets=(TOKEN, KEY))


NOT_YAML = "not a .yaml/.yml file, and no blueprint or feature uses it as an icon"


def workspace(tmp_path: Path, bp: dict) -> list[str]:
    root = write_blueprint_dir(tmp_path / "bp", [bp])
    functions = write_function_dir(tmp_path / "fn", root, PIPE)
    return ["-p", str(root), "--bundle", str(functions)]


def pipe_valves(root: Path, env: dict[str, str], token: str | None = None) -> tuple[list[dict], dict[str, str]]:
    state = build_desired(
        load_catalog(root), load_function_files(REPO / "owui_functions"), groups={}, env=env, token=token
    )
    pipe = state.functions["aihub_agent_pipe"]
    return json.loads(pipe.fields["valves.AGENTS"]), json.loads(pipe.fields["valves.API_KEYS"])


# --- 1. the admin token never becomes a backend key ----------------------------------------------


@pytest.mark.parametrize("value", [TOKEN, f"Bearer {TOKEN}", f"  {TOKEN}\n"], ids=["same", "bearer", "padded"])
def test_a_key_variable_holding_the_admin_token_is_refused_whatever_its_name(tmp_path: Path, value: str) -> None:
    bp = blueprint("desk")
    bp["backend"]["api_key_env"] = "DESK_KEY"
    root = write_blueprint_dir(tmp_path, [bp])
    with pytest.raises(BlueprintError) as info:
        pipe_valves(root, {"DESK_KEY": value}, token=TOKEN)
    [problem] = info.value.problems
    assert (problem.file.endswith("desk.yaml"), problem.line, problem.field) == (True, 7, "backend.api_key_env")
    assert "holds the Open WebUI admin token in use" in problem.message and TOKEN not in problem.message
    assert pipe_valves(root, {"DESK_KEY": KEY}, token=TOKEN)[1] == {"DESK_KEY": KEY}  # another key is fine


def test_sync_with_a_key_variable_holding_the_token_writes_nothing(
    capsys, fake: FakeOpenWebUI, monkeypatch, tmp_path: Path
) -> None:
    bp = blueprint("desk")
    bp["backend"]["api_key_env"] = "DESK_KEY"
    monkeypatch.setenv("DESK_KEY", TOKEN)
    code, out, err = run(capsys, "sync", "--yes", *workspace(tmp_path, bp))
    assert (code, out) == (1, "") and "DESK_KEY holds the Open WebUI admin token in use" in err
    assert fake.writes == []


def test_a_targets_token_variable_is_refused_as_a_backend_key(
    capsys, fake: FakeOpenWebUI, monkeypatch, tmp_path: Path
) -> None:
    targets = tmp_path / "targets.yaml"
    targets.write_text(f"targets:\n  local:\n    url: {fake.base_url}\n    token_env: LOCAL_TOKEN\n")
    bp = blueprint("desk")
    bp["backend"].update(api_key_env="LOCAL_TOKEN", api_key_from="server")  # sync would not even read it
    args = [*workspace(tmp_path, bp), "--targets-file", str(targets), "--target", "local"]
    monkeypatch.setenv("LOCAL_TOKEN", TOKEN)
    for command in ("validate", "diff", "sync"):
        code, _, err = run(capsys, command, *args)
        assert code == 1 and "backend.api_key_env: LOCAL_TOKEN holds an Open WebUI admin token" in err, err
    assert fake.writes == []


@pytest.mark.parametrize("name", ["OPENWEBUI_TOKEN", "OPENWEBUI_TOKEN_FILE", "WEBUI_SECRET_KEY"])
@pytest.mark.parametrize("key_from", ["sync", "server"])
def test_naming_a_token_variable_is_refused_offline(capsys, tmp_path: Path, name: str, key_from: str) -> None:
    bp = blueprint("desk")
    bp["backend"].update(api_key_env=name, api_key_from=key_from)
    code, _, err = run(capsys, "validate", *workspace(tmp_path, bp))
    assert code == 1 and f"backend.api_key_env: {name} " in err


# --- 7. keys the Open WebUI server reads ---------------------------------------------------------


def test_a_key_read_by_the_server_is_named_and_never_read_by_sync(tmp_path: Path) -> None:
    bp = blueprint(
        "desk",
        agents=[
            {"id": "a", "name": "A", "access": "public"},
            {"id": "b", "name": "B", "backend": {"api_key_env": "B_KEY", "api_key_from": "sync"}},
        ],
    )
    bp["backend"].update(api_key_env="RESEARCH_KEY", api_key_from="server")
    root = write_blueprint_dir(tmp_path, [bp])
    agents, keys = pipe_valves(root, {"B_KEY": KEY, "RESEARCH_KEY": "never-read-by-sync"})
    assert [(a["id"], a["api_key"], a["key_from"]) for a in agents] == [
        ("desk.a", "RESEARCH_KEY", "server"),
        ("desk.b", "B_KEY", "sync"),
    ]
    assert keys == {"B_KEY": KEY}
    # unset where sync runs: not an error, sync needs no value
    assert pipe_valves(root, {"B_KEY": KEY})[1] == {"B_KEY": KEY}
    # the default stays: sync reads the key and writes it
    bp["backend"].pop("api_key_from")
    root = write_blueprint_dir(tmp_path / "default", [bp])
    agents, keys = pipe_valves(root, {"B_KEY": KEY, "RESEARCH_KEY": "sk-research"})
    assert agents[0]["key_from"] == "sync" and keys == {"B_KEY": KEY, "RESEARCH_KEY": "sk-research"}


def test_sync_of_a_server_read_key_writes_only_its_name(
    capsys, fake: FakeOpenWebUI, monkeypatch, tmp_path: Path
) -> None:
    bp = blueprint("desk")
    bp["backend"].update(api_key_env="RESEARCH_KEY", api_key_from="server")
    monkeypatch.delenv("RESEARCH_KEY", raising=False)
    code, out, err = run(capsys, "sync", "--yes", *workspace(tmp_path, bp))
    assert code == 0, err
    valves = fake.functions["aihub_agent_pipe"]["valves"]
    assert json.loads(valves["API_KEYS"]) == {}
    [agent] = json.loads(valves["AGENTS"])
    assert (agent["api_key"], agent["key_from"]) == ("RESEARCH_KEY", "server")


# --- 3. backend URLs -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://a.example/x?api_key=1", "'api_key'"),
        ("https://a.example/x?apiKey=1", "'apiKey'"),
        ("https://a.example/x?access_token=1", "'access_token'"),
        ("https://a.example/x?X-Amz-Signature=ab", "'X-Amz-Signature'"),
        ("https://a.example/x?sig=1", "'sig'"),
        ("https://a.example/x?client_secret=1", "'client_secret'"),
        ("https://a.example/x?password=1", "'password'"),
        ("https://a.example/x#token=1", "'token'"),
        ("https://u:p@a.example/x", "user or password"),
        ("https://u@a.example/x", "user or password"),
    ],
)
def test_credentials_in_a_url_are_found(url: str, why: str) -> None:
    assert why in (credential_in_url(url) or "")


@pytest.mark.parametrize(
    "url",
    [
        "https://a.example/x?page=2",
        "https://a.example/x?keyword=k",
        "https://a.example/x?design=1",
        "https://a.example/v1",
    ],
)
def test_ordinary_query_parameters_are_not_credentials(url: str) -> None:
    assert credential_in_url(url) is None


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://10.9.8.7/x", "10.9.8.7"),
        ("http://agents.internal/x", "agents.internal"),
        ("http://127.0.0.1.nip.io/x", "127.0.0.1.nip.io"),
        ("http://127.0.0.1:8700/x", None),
        ("http://localhost/x", None),
        ("http://[::1]/x", None),
        ("https://agents.internal/x", None),
    ],
)
def test_plain_http_counts_as_local_only_on_loopback(url: str, host: str | None) -> None:
    assert plain_http_host(url) == host


def test_insecure_allows_plain_http_off_loopback_and_the_plan_shows_it(
    capsys, fake: FakeOpenWebUI, tmp_path: Path
) -> None:
    bp = blueprint(
        "desk",
        agents=[
            {"id": "a", "name": "A", "access": "public"},
            {"id": "b", "name": "B", "backend": {"url": "https://agents.example.com/b"}},
        ],
    )
    bp["backend"] = {"url": "http://10.9.8.7/desk", "insecure": True}
    code, out, err = run(capsys, "diff", *workspace(tmp_path, bp), "-o", "json")
    assert code == 0, err
    [pipe] = [c for c in json.loads(out)["changes"] if c["id"] == "aihub_agent_pipe"]
    [agents] = [f["after"] for f in pipe["fields"] if f["path"] == "valves.AGENTS"]
    assert [a.get("insecure") for a in json.loads(agents)] == [True, True]
    code, out, err = run(capsys, "diff", *workspace(tmp_path / "t", bp))
    assert code == 0 and "Warning: desk.a: plain http to 10.9.8.7 (insecure: true)" in err
    assert "desk.b" not in err  # its own backend is https
    # an agent's own backend inherits `insecure` from the blueprint's, unless it turns it off
    bp["agents"][1]["backend"] = {"url": "http://10.9.8.8/b", "insecure": False}
    code, _, err = run(capsys, "validate", *workspace(tmp_path / "u", bp))
    assert code == 1 and "agents[1].backend.url: plain http to 10.9.8.8" in err


@pytest.mark.parametrize("value", ["'yes'", "'true'", "1", "'on'"])
def test_insecure_must_be_a_yaml_boolean(capsys, tmp_path: Path, value: str) -> None:
    root = write_blueprint_dir(tmp_path / "bp", [blueprint("desk")])
    desk = root / "desk.yaml"
    desk.write_text(desk.read_text().replace("  transport: agui\n", f"  transport: agui\n  insecure: {value}\n"))
    code, _, err = run(capsys, "validate", "-p", str(root), "--bundle", str(REPO / "owui_functions"))
    assert code == 1 and "backend.insecure: expected true or false" in err


# --- 5. hidden characters ------------------------------------------------------------------------


def test_visible_escapes_controls_and_bidi_but_keeps_ordinary_text() -> None:
    assert visible("Demo \u202eagent\x00\x1b[2J") == "Demo \\u202eagent\\u0000\\u001b[2J"
    assert visible("Émile 日本 👩‍💻") == "Émile 日本 👩\\u200d💻"
    assert visible("a\nb", keep="\n") == "a\nb"


@pytest.mark.parametrize("char", ["\u2028", "\u2029"])
def test_line_and_paragraph_separators_are_hidden_characters(
    capsys, fake: FakeOpenWebUI, tmp_path: Path, char: str
) -> None:
    """Some terminals and log viewers break the line at U+2028/U+2029: a name must not hold one,
    and any other text shows it escaped."""
    escaped = f"\\u{ord(char):04x}"
    assert visible(f"a{char}b") == f"a{escaped}b"
    bp = blueprint("desk")
    bp["agents"][0]["name"] = f"Desk{char}agent"
    code, _, err = run(capsys, "validate", *workspace(tmp_path / "bad", bp))
    assert code == 1 and f"agents[0].name: contains U+{ord(char):04X}" in err, err
    bp = blueprint("desk")
    assert run(capsys, "sync", "--yes", *workspace(tmp_path / "ok", bp))[0] == 0
    bp["description"] = f"one{char}two"
    code, out, err = run(capsys, "diff", *workspace(tmp_path / "changed", bp))
    assert code == 0 and f"one{escaped}two" in out and char not in out + err, out


@pytest.mark.parametrize("output", ["text", "json", "markdown"])
def test_a_description_with_hidden_characters_is_escaped_in_the_plan(
    capsys, fake: FakeOpenWebUI, tmp_path: Path, output: str
) -> None:
    bp = blueprint("desk")
    assert run(capsys, "sync", "--yes", *workspace(tmp_path, bp))[0] == 0
    bp["description"] = "Reads \u202etxet\u202c and \x1b[31mred\x1b[0m"
    code, out, err = run(capsys, "diff", *workspace(tmp_path / "changed", bp), "-o", output)
    assert code == 0 and "meta.description" in out, err
    for char in ("\u202e", "\u202c", "\x1b"):
        assert char not in out
    assert "\\u202e" in out and "\\u001b" in out
    if output == "json":
        assert out.isascii()


def test_ids_from_the_instance_are_escaped_in_the_text_plan(capsys, fake: FakeOpenWebUI, tmp_path: Path) -> None:
    bp = blueprint("desk")
    args = workspace(tmp_path, bp)
    assert run(capsys, "sync", "--yes", *args)[0] == 0
    row = dict(fake.models["aihub_agent_pipe.desk.default"])
    row["id"] = "aihub_agent_pipe.desk.\u202eold"
    fake.models[row["id"]] = row  # a managed orphan whose id someone crafted
    code, out, err = run(capsys, "diff", *args)
    assert code == 0 and "\u202e" not in out + err and "aihub_agent_pipe.desk.\\u202eold" in err


# --- 4. every file is read or named --------------------------------------------------------------


def test_every_file_not_read_is_named_in_a_note(capsys, tmp_path: Path) -> None:
    root = write_blueprint_dir(tmp_path / "bp", [blueprint("desk", icon="icons/desk.png")])
    (root / "icons").mkdir()
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 32
    (root / "icons" / "desk.png").write_bytes(png)
    (root / "icons" / "unused.png").write_bytes(png)
    (root / "README.md").write_text("notes")
    (root / "desk.yaml.bak").write_text("old")
    (root / ".hidden.yaml").write_text("id: x")
    (root / "team").mkdir()
    (root / "team" / "other.yaml").write_text("id: other")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref")
    (root / "Extra.Yml").write_text((root / "desk.yaml").read_text().replace("id: desk", "id: extra"))
    args = ["-p", str(root), "--bundle", str(REPO / "owui_functions")]
    code, out, err = run(capsys, "validate", *args)
    assert code == 0 and out.startswith("Valid: 2 blueprints"), err  # Extra.Yml is a blueprint
    notes = sorted(line for line in err.splitlines() if line.startswith("Note: "))
    assert notes == sorted(
        [
            f"Note: {root / '.git'}: hidden directory, not read",
            f"Note: {root / '.hidden.yaml'}: hidden file, not read",
            f"Note: {root / 'README.md'}: not read: {NOT_YAML}",
            f"Note: {root / 'desk.yaml.bak'}: not read: {NOT_YAML}",
            f"Note: {root / 'icons' / 'unused.png'}: not read: {NOT_YAML}",
            f"Note: {root / 'team' / 'other.yaml'}: not read: blueprints are read only from the top level of the "
            "blueprint directory",
        ]
    ), err
    code, out, _ = run(capsys, "validate", *args, "-o", "json")
    assert len(json.loads(out)["notes"]) == 6


def test_sample_blueprints_leave_no_file_unread(capsys) -> None:
    code, _, err = run(capsys, "validate", "-p", str(REPO / "blueprints"), "--bundle", str(REPO / "owui_functions"))
    assert code == 0 and "Note:" not in err


# --- 8. -v ---------------------------------------------------------------------------------------

LOG_LINE = re.compile(r"^http: (GET|POST|DELETE) (/[^?\s]*) -> (\d{3}|[A-Za-z]+) in \d+ ms( \(retry \d+\))?$")


def test_verbose_logs_each_http_call_to_stderr_and_nothing_else(
    capsys, fake: FakeOpenWebUI, monkeypatch, tmp_path: Path
) -> None:
    bp = blueprint("desk")
    bp["backend"]["api_key_env"] = "DESK_KEY"
    monkeypatch.setenv("DESK_KEY", KEY)
    code, out, err = run(capsys, "-v", "sync", "--yes", *workspace(tmp_path, bp))
    assert code == 0 and "http:" not in out
    lines = [line for line in err.splitlines() if line.startswith("http:")]
    assert len(lines) == len(fake.calls) and all(LOG_LINE.match(line) for line in lines), err
    assert "http: GET /api/version -> 200" in err
    assert any(
        re.match(r"http: POST /api/v1/functions/id/aihub_agent_pipe/valves/update -> 200", line) for line in lines
    )
    # off again for the next command in the same process
    code, _, err = run(capsys, "diff", *workspace(tmp_path / "again", bp))
    assert code == 0 and "http:" not in err


def test_verbose_logs_failed_calls_and_retries_without_the_answer(
    capsys, fake: FakeOpenWebUI, monkeypatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("provisioner.openwebui.client.time.sleep", lambda _s: None)
    fake.faults.append(
        lambda m, p, b: httpx.Response(503, json={"detail": f"echo Bearer {TOKEN}"}) if p == "/api/version" else None
    )
    code, _, err = run(capsys, "-v", "diff", "--timeout", "1", *workspace(tmp_path, blueprint("desk")))
    assert code == 1
    lines = [line for line in err.splitlines() if line.startswith("http:")]
    assert lines[0].startswith("http: GET /api/version -> 503 in ") and lines[-1].endswith("(retry 3)"), err
    assert all(LOG_LINE.match(line) for line in lines) and "echo" not in "\n".join(lines)


def test_a_huge_directory_is_surveyed_only_so_far_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import provisioner.loader as loader

    monkeypatch.setattr(loader, "MAX_SURVEYED", 20)
    monkeypatch.setattr(loader, "MAX_NOTES", 5)
    root = write_blueprint_dir(tmp_path / "bp")
    for i in range(10):
        (root / f"notes-{i}.txt").write_text("x")
    notes = [n.message for n in load_catalog(root).notes]
    assert len(notes) == 6 and notes[-1] == "5 more files not read"
    for i in range(30):
        (root / f"more-{i}.txt").write_text("x")
    assert [n.message for n in load_catalog(root).notes] == ["more than 20 files: the rest were not looked at"]
