"""Secrets stay secret: the admin token and the backends' API keys never leave the process.

Every command runs through `provisioner.cli.main` against the in-memory Open WebUI served on a
real loopback socket, so httpx and httpcore do real I/O and log what they normally log. Each run
collects stdout, stderr, every log record (DEBUG, httpx and httpcore included) and the text,
repr and cause/context chain of any exception the app raised, and asserts that no piece of
either secret is in any of them: not the whole value, and no 8-character fragment of it (a
server or our own error excerpt may truncate an echo in the middle of a secret).
"""

from __future__ import annotations

import functools
import http.server
import json
import logging
import re
import socket
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
import typer.core
import typer.main

import provisioner.cli as cli
import provisioner.openwebui.client as client_module
import provisioner.pipeline as pipeline
from provisioner.errors import ConfigError, ProvisionError
from provisioner.openwebui.client import WITHHELD, OpenWebUIClient, check_url, redact
from tests.support.builders import REPO, blueprint, write_blueprint_dir, write_function_dir
from tests.support.fake_owui import FakeOpenWebUI

TOKEN = "sk-tok-Q7x9Zr2LmW4pV8nB3kT6"
API_KEY = "bk-key-Hd5Jq8Ws2Xe6Rt9Yu1Io"
SECRETS = {"token": TOKEN, "api key": API_KEY}
FRAGMENT = 8
PIPE = REPO / "owui_functions" / "aihub_agent_pipe.py"
APP = cli.app

Responder = Callable[[httpx.Request], "httpx.Response | None"]


def _recorder(sent: list[httpx.Request]) -> Callable[[httpx.Request], httpx.Response]:
    """A transport handler that keeps each request it is sent (and answers 599: none should be)."""

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(599)

    return handle


def fragments(secret: str) -> set[str]:
    return {secret[i : i + FRAGMENT] for i in range(len(secret) - FRAGMENT + 1)}


def leaks(text: str) -> list[str]:
    """Which secrets `text` gives away, whole or in part."""
    return [name for name, secret in SECRETS.items() if any(f in text for f in fragments(secret))]


# --- a real HTTP server in front of the in-memory Open WebUI -------------------------------------


class LoopbackOpenWebUI:
    """FakeOpenWebUI behind a real socket on 127.0.0.1, with responders that see whole requests.

    A responder gets the httpx.Request the server received (headers and body included) and may
    return the answer instead of the fake, e.g. an error that echoes everything it was sent.
    """

    def __init__(self) -> None:
        self.fake = FakeOpenWebUI()
        self.responders: list[Responder] = []
        self.authorizations: list[str] = []
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> LoopbackOpenWebUI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, request: httpx.Request) -> httpx.Response:
        self.authorizations.append(request.headers.get("authorization", ""))
        for responder in self.responders:
            response = responder(request)
            if response is not None:
                self.fake.calls.append((request.method, request.url.path))
                return response
        return self.fake._handle(request)

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                request = httpx.Request(
                    self.command,
                    owner.url + self.path,
                    headers=dict(self.headers.items()),
                    content=self.rfile.read(length),
                )
                response = owner.answer(request)
                self.send_response(response.status_code)
                self.send_header("content-type", response.headers.get("content-type", "application/json"))
                self.send_header("content-length", str(len(response.content)))
                self.end_headers()
                self.wfile.write(response.content)

            do_GET = do_POST = do_DELETE = _serve

            def log_message(self, *args: Any) -> None:  # keep the test's stderr for the CLI
                pass

        return Handler


def echo_everything(status: int, *, only: str = "") -> Responder:
    """An error answer that repeats the request: headers (the token) and body (valves)."""

    def respond(request: httpx.Request) -> httpx.Response | None:
        if only and not request.url.path.endswith(only):
            return None
        echoed = f"{request.method} {request.url} headers={dict(request.headers)} body={request.content.decode()}"
        return httpx.Response(status, json={"detail": echoed})

    return respond


# --- fixtures ------------------------------------------------------------------------------------


@pytest.fixture
def owui(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackOpenWebUI]:
    with LoopbackOpenWebUI() as server:
        monkeypatch.setenv("OPENWEBUI_URL", server.url)
        monkeypatch.setenv("OPENWEBUI_TOKEN", TOKEN)
        monkeypatch.setenv("DESK_KEY", API_KEY)
        for name in ("OPENWEBUI_TOKEN_FILE", "CI", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.delenv(name, raising=False)
        # Retries without the waits between them (the number of attempts is unchanged).
        monkeypatch.setattr(pipeline, "OpenWebUIClient", functools.partial(OpenWebUIClient, sleep=lambda _s: None))
        monkeypatch.setattr(cli, "OpenWebUIClient", functools.partial(OpenWebUIClient, sleep=lambda _s: None))
        yield server


@pytest.fixture
def bundle(tmp_path: Path) -> list[str]:
    """One blueprint whose backend key comes from DESK_KEY, with a custom feature, and its bundle."""
    bp = blueprint(
        "desk",
        calls=["web_research", "read_user_files"],
        agents=[
            {"id": "a", "name": "A", "access": "public"},
            {"id": "b", "name": "B", "backend": {"transport": "openai", "url": "http://127.0.0.1:8701/v1"}},
        ],
    )
    bp["backend"]["api_key_env"] = "DESK_KEY"
    root = write_blueprint_dir(tmp_path / "bp", [bp])
    functions = write_function_dir(tmp_path / "fn", root, PIPE)
    return ["-p", str(root), "--bundle", str(functions)]


class Witness:
    """Runs the CLI and keeps every text it produced: streams, log records, exceptions."""

    def __init__(self, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
        self.capsys, self.caplog = capsys, caplog
        self.exceptions: list[BaseException] = []
        self.argv: list[list[str]] = []
        caplog.set_level(logging.DEBUG)
        for name in ("httpx", "httpcore"):
            caplog.set_level(logging.DEBUG, logger=name)

    def __call__(self, *args: str) -> tuple[int, str, str]:
        self.argv.append(list(args))
        code = cli.main(list(args))
        out, err = self.capsys.readouterr()
        self.check(f"provision {' '.join(args[:1])}", out, err)
        return code, out, err

    def record(self, exc: BaseException) -> None:
        self.exceptions.append(exc)

    def check(self, label: str, out: str, err: str) -> None:
        texts = {"stdout": out, "stderr": err}
        for i, record in enumerate(self.caplog.records):
            texts[f"log {record.name} #{i}"] = self.caplog.handler.format(record) + repr(record.args)
        for i, exc in enumerate(self.exceptions):
            texts[f"exception #{i}"] = "".join(traceback.format_exception(exc)) + "".join(repr(e) for e in chain(exc))
        for where, text in texts.items():
            assert not leaks(text), f"{label}: {leaks(text)} leaked into {where}:\n{text}"


def chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        pending += [current.__cause__, current.__context__]


@pytest.fixture
def provision(capsys, caplog, monkeypatch: pytest.MonkeyPatch) -> Witness:
    """`provision(*args)` -> (exit code, stdout, stderr), checked for leaks after every run."""
    witness = Witness(capsys, caplog)
    app = cli.app

    def spying_app(*args: Any, **kwargs: Any) -> Any:
        try:
            return app(*args, **kwargs)
        except BaseException as exc:
            witness.record(exc)
            raise

    monkeypatch.setattr(cli, "app", spying_app)
    return witness


# --- every command, the happy paths ----------------------------------------------------------------


def test_no_command_prints_or_logs_a_secret(owui, bundle, provision, tmp_path: Path) -> None:
    assert provision("validate", *bundle)[0] == 0
    assert provision("validate", *bundle, "-o", "json")[0] == 0
    assert provision("generate", "-p", bundle[1], "--out", str(tmp_path / "generated"))[0] == 0
    for command in (
        ["diff"],
        ["diff", "-o", "json"],
        ["diff", "-o", "markdown"],
        ["sync", "--dry-run"],
        ["sync", "--dry-run", "-o", "json"],
    ):
        assert provision(*command, *bundle)[0] == 0
    code, out, _ = provision("sync", *bundle, "-o", "json")
    assert code == 0 and json.loads(out)["result"]["failed"] == []
    # The secrets did travel, to the one place they belong.
    assert set(owui.authorizations) == {f"Bearer {TOKEN}"}
    assert json.loads(owui.fake.functions["aihub_agent_pipe"]["valves"]["API_KEYS"]) == {"DESK_KEY": API_KEY}

    assert provision("sync", *bundle)[0] == 0  # no changes
    assert provision("list")[0] == 0
    assert provision("list", "-o", "json")[0] == 0

    # A rotated key: an update of the secret valve, shown masked on both sides.
    owui.fake.functions["aihub_agent_pipe"]["valves"]["API_KEYS"] = json.dumps({"DESK_KEY": "bk-old-Zx1Cv2Bn3Mm4"})
    code, out, _ = provision("diff", *bundle, "-o", "json")
    [change] = json.loads(out)["changes"]
    assert change["fields"] == [{"path": "valves.API_KEYS", "before": "(sensitive)", "after": "(sensitive)"}]
    assert provision("diff", *bundle)[0] == 0
    assert "| `valves.API_KEYS` | `(sensitive)` | `(sensitive)` |" in provision("diff", *bundle, "-o", "markdown")[1]
    assert provision("sync", *bundle)[0] == 0
    assert provision.exceptions == []
    assert not any(leaks(" ".join(argv)) for argv in provision.argv)  # the secrets came from env only
    assert {"httpx", "httpcore.http11"} <= {r.name for r in provision.caplog.records}  # logs were checked


def test_no_option_takes_a_secret_and_a_secret_given_as_an_option_is_not_echoed(provision) -> None:
    root = typer.main.get_command(APP)
    assert isinstance(root, typer.core.TyperGroup)
    for name, command in root.commands.items():
        for param in command.params:
            # a file's path, a public key id (a kid to revoke too), and flags (which take no value) carry no secret
            if param.name in ("token_file", "key_file", "key_id", "revoke_identity_key") or getattr(
                param, "is_flag", False
            ):
                continue
            assert not any(word in param.name for word in ("token", "key", "secret", "password")), (name, param.name)
    for args in (["diff", "--token", TOKEN], [f"--token={TOKEN}", "diff"], ["diff", "--api-key", API_KEY]):
        code, _, err = provision(*args)
        assert code == 1 and "No such option" in err


def test_token_file_is_read_and_its_content_never_printed(owui, bundle, provision, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OPENWEBUI_TOKEN")
    token_file = tmp_path / "admin-key"
    token_file.write_text(TOKEN + "\n", encoding="utf-8")
    for command in (["diff"], ["diff", "-o", "json"], ["sync"], ["list"]):
        assert provision(*command, *(bundle if command[0] != "list" else []), "--token-file", str(token_file))[0] == 0
    assert set(owui.authorizations) == {f"Bearer {TOKEN}"}
    monkeypatch.setenv("OPENWEBUI_TOKEN_FILE", str(token_file))
    assert provision("diff", *bundle)[0] == 0
    monkeypatch.setenv("OPENWEBUI_TOKEN", TOKEN)
    code, _, err = provision("diff", *bundle)
    assert code == 1 and "use one" in err


@pytest.mark.parametrize(
    "content",
    [f"# admin key for CI\n{TOKEN}\n", f"{TOKEN}\r\nsecond line", f"OPENWEBUI_TOKEN={TOKEN} # é"],
    ids=["comment-line", "two-lines", "non-ascii"],
)
def test_a_token_file_that_is_not_one_header_value_is_refused_without_showing_it(
    owui, bundle, provision, monkeypatch, tmp_path: Path, content: str
) -> None:
    monkeypatch.delenv("OPENWEBUI_TOKEN")
    token_file = tmp_path / "admin-key"
    token_file.write_text(content, encoding="utf-8")
    code, _, err = provision("diff", *bundle, "--token-file", str(token_file))
    assert code == 1 and "token" in err
    assert owui.authorizations == []  # refused before anything was sent


def test_a_token_file_that_is_not_utf8_is_a_clean_error(owui, bundle, provision, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OPENWEBUI_TOKEN")
    token_file = tmp_path / "admin-key"
    token_file.write_bytes(TOKEN.encode() + b"\xff\n")
    code, _, err = provision("diff", *bundle, "--token-file", str(token_file))
    assert code == 1 and "token file" in err


# --- error paths ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "hint"),
    [(401, "token was rejected"), (403, "not an admin"), (500, "server error after 4 attempts")],
)
@pytest.mark.parametrize("command", [["diff"], ["diff", "-o", "json"], ["sync"], ["sync", "-o", "json"], ["list"]])
def test_an_error_answer_that_echoes_the_request_shows_no_secret(
    owui, bundle, provision, status: int, hint: str, command: list[str]
) -> None:
    owui.responders.append(echo_everything(status))
    code, out, err = provision(*command, *(bundle if command[0] != "list" else []))
    assert code == 1 and f"answered {status}" in err and hint in err
    assert isinstance(provision.exceptions[-1], ProvisionError)  # and its text was checked
    assert owui.authorizations[0] == f"Bearer {TOKEN}"  # the echo did carry the token
    assert len(owui.authorizations) == (4 if status == 500 else 1)


@pytest.mark.parametrize("command", [["diff"], ["sync", "-o", "json"], ["list"]])
def test_connection_refused_shows_no_secret(owui, bundle, provision, monkeypatch, command: list[str]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    monkeypatch.setenv("OPENWEBUI_URL", f"http://127.0.0.1:{closed_port}")
    code, _, err = provision(*command, *(bundle if command[0] != "list" else []))
    assert code == 1 and "cannot reach Open WebUI" in err


def test_bad_blueprint_and_a_missing_key_variable_show_no_secret(
    owui, bundle, provision, monkeypatch, tmp_path: Path
) -> None:
    root = Path(bundle[1])
    desk = root / "desk.yaml"
    desk.write_text(desk.read_text().replace("web_research", "no_such_capability"))
    for command in (["validate"], ["diff"], ["sync", "-o", "json"]):
        code, _, err = provision(*command, *bundle)
        assert code == 1 and "unknown capability 'no_such_capability'" in err
    desk.write_text(desk.read_text().replace("no_such_capability", "web_research"))
    monkeypatch.delenv("DESK_KEY")
    monkeypatch.setenv("OTHER_KEY", API_KEY)  # a secret elsewhere in the environment
    code, _, err = provision("sync", *bundle)
    assert code == 1 and "environment variable DESK_KEY is not set" in err
    assert owui.fake.writes == []


def _valve_echo(shape: str) -> Responder:
    """A valves/update failure whose detail repeats the valves (the secret one first) in some shape."""

    def respond(request: httpx.Request) -> httpx.Response | None:
        if not request.url.path.endswith("/valves/update"):
            return None
        valves = json.loads(request.content)
        keys = valves["API_KEYS"]
        at = keys.index(API_KEY)
        echo = {"API_KEYS": keys, **valves}
        detail = {
            "verbatim": f"bad valves: {echo}",
            "json": f"bad valves: {json.dumps(echo)}",
            "double-json": json.dumps(json.dumps(echo)),
            # the server's own excerpt ends inside the key
            "cut-by-server": f"invalid API_KEYS: {keys[: at + len(API_KEY) // 2]}",
            # long enough that our 300-character excerpt of the detail ends inside the key
            "cut-by-us": "x" * (300 - at - len(API_KEY) // 2) + keys,
            # pydantic's error text shortens a long input_value in the middle
            "pydantic": f"1 validation error for Valves\nAPI_KEYS\n  input_value='{keys[:24]}...{keys[-24:]}'",
        }[shape]
        return httpx.Response(400, json={"detail": detail})

    return respond


@pytest.mark.parametrize("shape", ["verbatim", "json", "double-json", "cut-by-server", "cut-by-us", "pydantic"])
@pytest.mark.parametrize("output", ["text", "json"])
def test_valve_update_failing_with_an_echo_of_its_input_shows_no_secret(
    owui, bundle, provision, shape: str, output: str
) -> None:
    owui.responders.append(_valve_echo(shape))
    code, out, err = provision("sync", *bundle, "-o", output)
    assert code == 1 and "Sync stopped part-way" in err and "valves/update" in err
    if output == "json":
        [failed] = json.loads(out)["result"]["failed"]
        assert failed["id"] == "aihub_agent_pipe" and "answered 400" in failed["error"]


def test_redact_masks_whole_secrets_and_withholds_a_text_that_keeps_a_piece_of_one() -> None:
    assert redact(f"bad valves: {{'K': '{API_KEY}'}}", [API_KEY]) == "bad valves: {'K': '(sensitive)'}"
    assert redact(f"input_value='{API_KEY[:12]}...'", [API_KEY]) == WITHHELD
    assert redact(f"Bearer {TOKEN} and {API_KEY}", [API_KEY, TOKEN]) == "Bearer (sensitive) and (sensitive)"
    assert redact("nothing secret, not even bk-key", [API_KEY]) == "nothing secret, not even bk-key"


@pytest.mark.parametrize("token", ["", "two words", "line\nbreak", "caf\u00e9", "tab\there"])
def test_a_token_that_cannot_be_a_header_value_is_refused_before_any_request(token: str) -> None:
    sent: list[httpx.Request] = []
    with pytest.raises(ConfigError, match="the token holds") as info:
        OpenWebUIClient(
            base_url="http://127.0.0.1:9",
            token=token,
            http=httpx.Client(transport=httpx.MockTransport(_recorder(sent))),
        )
    assert not token or token not in str(info.value)
    assert sent == []


# --- provision -v --------------------------------------------------------------------------------


def test_verbose_output_names_each_call_and_no_secret(owui, bundle, provision) -> None:
    for command in (["diff"], ["sync"], ["sync", "-o", "json"], ["list"]):
        code, out, err = provision("-v", *command, *(bundle if command[0] != "list" else []))
        assert code == 0 and "http: GET /api/v1/models/all -> 200 in " in err and "http:" not in out
    assert any("valves/update" in r.getMessage() for r in provision.caplog.records if r.name == "provisioner.http")


@pytest.mark.parametrize(
    "responder",
    [echo_everything(500), echo_everything(401), _valve_echo("verbatim"), _valve_echo("cut-by-server")],
    ids=["500-echo", "401-echo", "valves-echo", "valves-cut"],
)
def test_verbose_output_of_a_failing_sync_shows_no_secret(owui, bundle, provision, responder: Responder) -> None:
    owui.responders.append(responder)
    code, _, err = provision("-v", "sync", *bundle)
    assert code == 1 and re.search(r"^http: (GET|POST) /\S* -> (500|401|400) in \d+ ms", err, re.M), err


# --- plain HTTP ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://chat.example.com",
        "http://10.0.0.5:8080",
        "http://0.0.0.0:8080",
        "http://127.0.0.1.nip.io",
        "http://localhost.example.com",
        "http://[::ffff:10.0.0.5]",
        "http://127.0.0.1@chat.example.com",
        "http://user:pw@127.0.0.1:8080",
    ],
)
def test_plain_http_is_refused_for_anything_but_loopback(provision, monkeypatch, bundle, url: str) -> None:
    monkeypatch.setenv("OPENWEBUI_TOKEN", TOKEN)
    sent: list[httpx.Request] = []
    monkeypatch.setattr(
        client_module, "make_http_client", lambda timeout: httpx.Client(transport=httpx.MockTransport(_recorder(sent)))
    )
    code, _, err = provision("diff", *bundle, "--url", url)
    assert code == 1 and ("refusing plain HTTP" in err or "not in the URL" in err)
    assert sent == []
    with pytest.raises(ConfigError):
        check_url(url, insecure=False)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080",
        "http://localhost:8080/",
        "http://127.3.2.1",
        "http://[::1]:8080",
        "https://chat.example.com",
    ],
)
def test_loopback_and_https_are_accepted(url: str) -> None:
    assert check_url(url, insecure=False) == url.rstrip("/")


def test_plain_http_to_another_host_is_sent_with_insecure(provision, monkeypatch, bundle) -> None:
    monkeypatch.setenv("OPENWEBUI_TOKEN", TOKEN)
    monkeypatch.setenv("DESK_KEY", API_KEY)
    fake = FakeOpenWebUI(base_url="http://chat.example.com")
    hosts: list[str] = []

    def handle(request: httpx.Request) -> httpx.Response:  # in-process: nothing leaves the machine
        hosts.append(request.url.host)
        return fake._handle(request)

    monkeypatch.setattr(
        client_module, "make_http_client", lambda timeout: httpx.Client(transport=httpx.MockTransport(handle))
    )
    code, out, _ = provision("diff", *bundle, "--url", "http://chat.example.com", "--insecure")
    assert code == 0 and out.startswith("Plan: ")
    assert set(hosts) == {"chat.example.com"}


def test_plain_http_to_loopback_never_goes_through_an_environment_proxy(owui, bundle, provision, monkeypatch) -> None:
    with LoopbackOpenWebUI() as proxy:  # stands in for a proxy on another host
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "")
        provision("diff", *bundle)
        assert proxy.authorizations == []
        assert owui.authorizations == [f"Bearer {TOKEN}"] * len(owui.authorizations) and owui.authorizations
