"""A server that echoes the valves it received shows no secret, whatever changed (issue 23, 1).

A loopback proxy stands in front of the session's real Open WebUI and passes every request
through, except `POST …/valves/update`, which it answers with `400 {"detail": "could not save:
API_KEYS=<what it received> SIGN=<the HISTORY_SIGNING_KEY it received>"}`, the way a
misbehaving server or gateway may. Only a backend URL changes, so neither key is in the plan's
changed fields; the request still carries both. `provision -v sync --yes` in JSON and Markdown
must show none of them, raw or encoded, whole or an 8-character piece, on stdout or stderr.
"""

from __future__ import annotations

import base64
import html
import http.server
import json
import threading
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

import provisioner.cli as cli
from tests.support.builders import blueprint, write_blueprint_dir

# Keys with every character an encoding changes, and a plain one.
KEYS = {"DESK_KEY": 'bk/desk+Q7x9=Zr&2"Lm\\W4<p>é-V8nB3', "OTHER_KEY": "bk-other-Hd5Jq8Ws2Xe6Rt9Yu1Io"}
VALVES_PATH = "/valves/update"


class EchoProxy:
    """Forwards to `upstream`; answers a valves update with an echo of the valves it received.

    `encoded`: the echo also repeats them URL-encoded (`/` kept and not), HTML-escaped and in base64.
    """

    def __init__(self, upstream: str, *, encoded: bool = False) -> None:
        self.upstream, self.encoded = upstream, encoded
        self.echoed = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _handle(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.command == "POST" and self.path.endswith(VALVES_PATH):
                    status, content, kind = 400, proxy.echo(body), "application/json"
                else:
                    status, content, kind = proxy.forward(self.command, self.path, dict(self.headers), body)
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = do_DELETE = _handle

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._http = httpx.Client(base_url=upstream, timeout=60, trust_env=False)

    def forward(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes, str]:
        keep = {k: v for k, v in headers.items() if k.lower() in ("authorization", "content-type", "accept")}
        answer = self._http.request(method, path, headers=keep, content=body)
        return answer.status_code, answer.content, answer.headers.get("content-type", "application/json")

    def echo(self, body: bytes) -> bytes:
        self.echoed += 1
        valves = json.loads(body)
        api_keys, sign = str(valves.get("API_KEYS")), str(valves.get("HISTORY_SIGNING_KEY"))
        detail = f"could not save: API_KEYS={api_keys} SIGN={sign}"
        if self.encoded:
            inner = json.loads(api_keys)
            detail += " " + " ".join(
                f"{name}: url={quote(key, safe='')} path={quote(key)} html={html.escape(key)} "
                f"b64={base64.b64encode(key.encode()).decode()} "
                f"b64url={base64.urlsafe_b64encode(key.encode()).decode().rstrip('=')}"
                for name, key in sorted(inner.items())
            )
            detail += f" sign_b64={base64.b64encode(sign.encode()).decode()}"
        return json.dumps({"detail": detail}).encode()

    def __enter__(self) -> EchoProxy:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._http.close()


def _forms(secret: str) -> set[str]:
    """The secret as the proxy may have echoed it, and every 8-character piece of it raw."""
    raw = secret.encode()
    forms = {
        secret,
        quote(secret, safe=""),
        quote(secret),
        html.escape(secret),
        json.dumps(secret)[1:-1],
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
    }
    return forms | {secret[i : i + 8] for i in range(len(secret) - 7)}


def _leaks(text: str, secrets: dict[str, str]) -> list[str]:
    return sorted(name for name, secret in secrets.items() if any(form in text for form in _forms(secret)))


def _repo(root: Path, url: str) -> Path:
    desk = blueprint("desk", backend={"transport": "agui", "url": url, "api_key_env": "DESK_KEY"})
    other = blueprint(
        "other", backend={"transport": "agui", "url": "http://127.0.0.1:8700/other", "api_key_env": "OTHER_KEY"}
    )
    return write_blueprint_dir(root, [desk, other])


@pytest.fixture
def synced(owui, bundle: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> dict[str, str]:
    """The instance synced once, directly; returns every secret the pipe's valves now hold."""
    for name, key in KEYS.items():
        monkeypatch.setenv(name, key)
    functions = bundle[bundle.index("--bundle") + 1]
    root = _repo(tmp_path / "bp", "http://127.0.0.1:8700/desk")
    assert cli.main(["sync", "--yes", "-p", str(root), "--bundle", functions]) == 0, capsys.readouterr()
    capsys.readouterr()
    with owui.client() as http:
        valves = http.get("/api/v1/functions/id/aihub_agent_pipe/valves").raise_for_status().json()
    assert json.loads(valves["API_KEYS"]) == KEYS  # the keys really are in the valves the update sends
    _repo(tmp_path / "bp", "http://127.0.0.1:8700/desk-moved")  # only a backend URL changes
    return {
        **KEYS,
        "HISTORY_SIGNING_KEY": valves["HISTORY_SIGNING_KEY"],
        "admin token": owui.token,
        "root": str(root),
        "functions": functions,
    }


@pytest.mark.parametrize("output, encoded", [("json", False), ("markdown", False), ("json", True)])
def test_a_server_echoing_the_valves_it_received_shows_no_key_that_did_not_change(
    owui, synced: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys, output: str, encoded: bool
) -> None:
    root, functions = synced.pop("root"), synced.pop("functions")
    with EchoProxy(owui.url, encoded=encoded) as proxy:
        monkeypatch.setenv("OPENWEBUI_URL", proxy.url)
        code = cli.main(["-v", "sync", "--yes", "-p", root, "--bundle", functions, "-o", output])
        out, err = capsys.readouterr()
    assert proxy.echoed == 1 and code == 1, (out, err)
    assert _leaks(out + err, synced) == [], "printed in clear"
    assert "could not save" in out + err  # the server's own words are still shown
    if output == "json":
        [failed] = json.loads(out)["result"]["failed"]
        assert failed["id"] == "aihub_agent_pipe" and "answered 400" in failed["error"]
        assert "API_KEYS=" in failed["error"] and "(sensitive)" in failed["error"], failed["error"]
        assert [f["path"] for c in json.loads(out)["plan"]["changes"] for f in c["fields"]] == ["valves.AGENTS"]
    else:
        assert "aihub_agent_pipe" in out and "(sensitive)" in out + err
