"""Pins of the provisioner's security rules that no other test held (issue 29): each test fails
when its rule is removed, as tests/support/provisioner_mutations.py proves by removing it.

Where to connect and how (loopback is an address, no proxy, no redirect), what an output may
hold (ASCII JSON, no value of a valve named like a secret), what a key read on the server
never is (a value in API_KEYS), and what `dump --force` may write (never through a symlink).
"""

from __future__ import annotations

import functools
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import respx

from provisioner.desired import build_desired
from provisioner.dump import Dumped, write_dump
from provisioner.errors import ConfigError
from provisioner.function_files import load_function_files
from provisioner.loader import load_catalog
from provisioner.openwebui.client import check_url, make_http_client
from provisioner.urls import is_loopback
from tests.support.builders import REPO, blueprint, closed_port, write_blueprint_dir, write_function_dir
from tests.support.fake_owui import FakeOpenWebUI
from tests.support.run_cli import run_cli

TOKEN = "sk-pins-Vb7Nm2Kq9Wx4Lz6R"
PIPE = REPO / "owui_functions" / "aihub_agent_pipe.py"
run = functools.partial(run_cli, secrets=(TOKEN,))


# --- where the token may go ---------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.attacker.example", "127.0.0.1.nip.io", "localhost.attacker.example"])
def test_a_name_that_only_looks_like_loopback_is_not_loopback(host: str) -> None:
    assert not is_loopback(host)
    with pytest.raises(ConfigError, match=f"refusing plain HTTP to {host}"):
        check_url(f"http://{host}:8080", insecure=False)


def test_a_backend_on_a_name_that_only_looks_like_loopback_needs_insecure(capsys, tmp_path: Path) -> None:
    bp = blueprint("desk")
    bp["backend"]["url"] = "http://127.attacker.example:8700/desk"
    root = write_blueprint_dir(tmp_path / "bp", [bp])
    code, out, err = run(capsys, "validate", "-p", str(root), "-o", "json")
    assert code == 1 and "plain http to 127.attacker.example" in out, out + err


@pytest.mark.parametrize("address", ["127.0.0.1", "127.8.9.10", "::1", "localhost"])
def test_loopback_addresses_are_loopback(address: str) -> None:
    assert is_loopback(address)


class _Answering(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = b'{"version": "0.12.4"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def loopback_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answering)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_plain_http_goes_straight_to_the_server_never_through_an_environment_proxy(
    loopback_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead_proxy = f"http://127.0.0.1:{closed_port()}"  # a request through it fails to connect
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, dead_proxy)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    with make_http_client(5.0) as http:
        assert http.get(loopback_server + "/api/version").json() == {"version": "0.12.4"}


def test_a_redirect_is_not_followed_so_the_token_goes_nowhere_else() -> None:
    with respx.mock(assert_all_called=False) as router:
        router.get("http://127.0.0.1:9/api/version").mock(
            return_value=httpx.Response(302, headers={"Location": "http://127.0.0.2:9/collect"})
        )
        elsewhere = router.get("http://127.0.0.2:9/collect").mock(return_value=httpx.Response(200, json={}))
        with make_http_client(5.0) as http:
            answer = http.get("http://127.0.0.1:9/api/version", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 302 and not elsewhere.called


# --- what an output may hold --------------------------------------------------------------------


def _desk(tmp_path: Path, **backend) -> Path:
    bp = blueprint(
        "desk", description="Réponses — ‘quoted’", agents=[{"id": "a", "name": "Agent é", "access": "public"}]
    )
    bp["backend"].update(backend)
    root = write_blueprint_dir(tmp_path / "bp", [bp])
    write_function_dir(tmp_path / "fn", root, PIPE)
    return root


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenWebUI]:
    server = FakeOpenWebUI()
    monkeypatch.setenv("OPENWEBUI_URL", server.base_url)
    monkeypatch.setenv("OPENWEBUI_TOKEN", TOKEN)
    with respx.mock(assert_all_called=False) as router:
        server.mount(router)
        yield server


@pytest.mark.parametrize("command", [["diff", "-o", "json"], ["sync", "-o", "json"], ["list", "-o", "json"]])
def test_json_output_is_ascii_with_json_escapes(
    capsys, tmp_path: Path, server: FakeOpenWebUI, command: list[str]
) -> None:
    root = _desk(tmp_path)
    if command[0] == "list":
        assert run(capsys, "sync", "-p", str(root), "--bundle", str(root.parent / "fn"))[0] == 0
        args = command
    else:
        args = [*command, "-p", str(root), "--bundle", str(root.parent / "fn")]
    code, out, err = run(capsys, *args)
    assert code == 0, err
    assert out.isascii() and "Agent \\u00e9" in out, out[:500]
    json.loads(out)


def test_a_valve_named_like_a_secret_is_masked_in_an_error_that_echoes_it(
    capsys, tmp_path: Path, server: FakeOpenWebUI
) -> None:
    """A valve set by hand (not one the plan marks sensitive) is resent by every valves write:
    a server that echoes the body must not print its value."""
    root = _desk(tmp_path)
    assert run(capsys, "sync", "-p", str(root), "--bundle", str(root.parent / "fn"))[0] == 0
    hand_set = "oauth-client-secret-Gh4Jk8Lp2Qw6"
    pipe = server.functions["aihub_agent_pipe"]
    pipe["valves"] = {**pipe["valves"], "OAUTH_CLIENT_SECRET": hand_set, "AGENTS": "[]"}  # the plan rewrites AGENTS
    sent: list[dict] = []

    def echo(method: str, path: str, body):  # the valve first: an excerpt of an answer is cut at 300 characters
        if not path.endswith("/valves/update"):
            return None
        sent.append(body)
        return httpx.Response(
            400, json={"detail": f"bad valves: OAUTH_CLIENT_SECRET={body.get('OAUTH_CLIENT_SECRET')}"}
        )

    server.faults.append(echo)
    code, out, err = run(capsys, "sync", "-p", str(root), "--bundle", str(root.parent / "fn"), secrets=(hand_set,))
    assert code == 1 and "bad valves: OAUTH_CLIENT_SECRET=(sensitive)" in err, err
    assert sent and sent[0]["OAUTH_CLIENT_SECRET"] == hand_set  # it was in the request: only masking kept it out


def test_a_key_read_on_the_server_is_never_read_by_provision(tmp_path: Path) -> None:
    root = _desk(tmp_path, api_key_env="DESK_KEY", api_key_from="server")
    state = build_desired(
        load_catalog(root),
        load_function_files(root.parent / "fn"),
        groups={},
        env={"DESK_KEY": "sk-server-side-Rt5Yu8Io"},
    )
    fields = state.functions["aihub_agent_pipe"].fields
    assert "sk-server-side-Rt5Yu8Io" not in json.dumps(dict(fields))
    [entry] = json.loads(fields["valves.AGENTS"])
    assert (entry["api_key"], entry["key_from"]) == ("DESK_KEY", "server")


# --- what dump may write --------------------------------------------------------------------------


def test_dump_force_replaces_a_symlink_and_never_writes_through_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text("keep me\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "helpdesk.yaml").symlink_to(outside)
    write_dump(out, Dumped({"helpdesk.yaml": b"dumped\n"}, []), force=True)
    assert outside.read_text() == "keep me\n"
    assert not (out / "helpdesk.yaml").is_symlink() and (out / "helpdesk.yaml").read_bytes() == b"dumped\n"


# --- what a backend may never receive, and how the token may travel ------------------------------


@pytest.mark.parametrize("name", ["WEBUI_SECRET_KEY", "WEBUI_JWT_SECRET_KEY", "DATABASE_URL", "REDIS_URL"])
def test_api_key_env_naming_one_of_open_webuis_own_secrets_is_refused_at_validate(
    capsys, tmp_path: Path, name: str
) -> None:
    root = _desk(tmp_path, api_key_env=name)
    code, out, err = run(capsys, "validate", "-p", str(root), "-o", "json")
    problems = json.loads(out)["problems"] if out else []
    assert code == 1 and any(name in p["message"] and p["field"].endswith("api_key_env") for p in problems), out + err


def test_a_key_variable_holding_the_admin_token_in_use_is_refused_before_any_write(
    capsys, tmp_path: Path, server: FakeOpenWebUI, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _desk(tmp_path, api_key_env="DESK_KEY")
    monkeypatch.setenv("DESK_KEY", f"Bearer {TOKEN}")
    code, out, err = run(capsys, "sync", "-p", str(root), "--bundle", str(root.parent / "fn"))
    assert code == 1 and "DESK_KEY holds the Open WebUI admin token in use" in out + err
    assert server.writes == [] and server.functions == {}


@pytest.mark.parametrize("token", [f"{TOKEN}\r\nX-Injected: 1", f"{TOKEN}\n", f"{TOKEN} x", f"{TOKEN}é"])
def test_a_token_that_could_break_its_header_is_refused_and_not_echoed(token: str) -> None:
    from provisioner.openwebui.client import OpenWebUIClient

    with pytest.raises(ConfigError) as raised:
        OpenWebUIClient(base_url="http://127.0.0.1:9", token=token)
    assert TOKEN not in str(raised.value) and "token holds whitespace" in str(raised.value)


def test_a_token_file_that_grew_after_its_check_is_read_no_further_than_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The size check reads fstat; a file that grows after it (or a file whose size says 0, as
    /proc's do) is still read only up to MAX_TOKEN_FILE_BYTES + 1 bytes, never whole."""
    import os

    import provisioner.openwebui.token_file as token_file

    path = tmp_path / "token"
    path.write_bytes(b"x" * (4 * 1024 * 1024))
    path.chmod(0o600)
    real_fstat, real_read = os.fstat, os.read
    read: list[int] = []

    def small_fstat(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        return os.stat_result((info.st_mode, *info[1:6], 0, *info[7:]))  # st_size 0, as before it grew

    def counting_read(fd: int, size: int) -> bytes:
        data = real_read(fd, size)
        read.append(len(data))
        return data

    monkeypatch.setattr(token_file.os, "fstat", small_fstat)
    monkeypatch.setattr(token_file.os, "read", counting_read)
    with pytest.raises(ConfigError, match="larger than"):
        token_file.read_token_file(path, lambda message: None)
    assert sum(read) <= token_file.MAX_TOKEN_FILE_BYTES + 1


@pytest.mark.parametrize("name", ["aihub_agent_pipe", "aihub_feature_filter", "aihub_my_filter"])
def test_a_user_function_may_not_take_a_bundle_id_or_its_prefix(capsys, tmp_path: Path, name: str) -> None:
    root = _desk(tmp_path)
    functions = tmp_path / "functions"
    functions.mkdir()
    (functions / f"{name}.py").write_text(
        '"""\ntitle: Mine\n"""\n\n\nclass Filter:\n    def inlet(self, body: dict) -> dict:\n        return body\n'
    )
    code, out, err = run(capsys, "validate", "-p", str(root), "--functions", str(functions), "-o", "json")
    problems = json.loads(out)["problems"] if out.strip() else []
    assert code == 1 and any("is reserved for the bundle" in p["message"] for p in problems), out + err


def test_provision_token_out_never_writes_through_a_symlink(tmp_path: Path) -> None:
    """--out FILE that is a symlink (planted in a shared work dir) is refused: the key would land
    wherever the link points, readable as that file is."""
    from provisioner.errors import ProvisionError
    from provisioner.openwebui.token import write_secret_file

    target = tmp_path / "elsewhere"
    target.write_text("keep me\n")
    link = tmp_path / "token"
    link.symlink_to(target)
    with pytest.raises(ProvisionError, match=f"cannot write {link}"):
        write_secret_file(link, TOKEN)
    assert target.read_text() == "keep me\n" and link.is_symlink()


@pytest.mark.parametrize(
    "marker",
    [{"managed_by": "someone-else"}, {"managed_by": "AIHUB-PROVISION"}, {"managed_by": None}, {}],
    ids=["another-tool", "case", "none", "empty"],
)
def test_a_marker_that_does_not_name_provision_is_not_provisions(marker: dict) -> None:
    """A row is provision's only when its marker says `managed_by: aihub-provision` exactly: a row
    another tool or a person marked keeps every field (sync refuses it without --adopt, prune
    leaves it). Only the e2e ownership test held this before."""
    from provisioner.contract import MARKER_KEY
    from provisioner.openwebui.observed import observed_model

    row = {"id": "aihub_agent_pipe.foreign.agent", "name": "Theirs", "meta": {MARKER_KEY: marker}}
    assert observed_model(row).managed is False
    ours = {**row, "meta": {MARKER_KEY: {**marker, "managed_by": "aihub-provision"}}}
    assert observed_model(ours).managed is True
