"""An agent that reads files and answers with an image, synced to a real Open WebUI, and the
browser's way of uploading and attaching files: what the e2e tests of files and images across
replicas and restarts share (tests/e2e/test_ha_files_e2e.py, tests/e2e/test_restart_mid_turn_e2e.py)."""

from __future__ import annotations

import base64
import json
import os
import threading
import uuid
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from demo_agents.sse_handler import SSEHandler
from tests.support.builders import CAPABILITIES as BUILDER_CAPABILITIES
from tests.support.builders import blueprint, write_blueprint_dir, write_function_dir
from tests.support.chat_support import AGENT_PIPE, provision
from tests.support.owui_instance import OpenWebUIInstance

MODEL = "aihub_agent_pipe.files.default"
CALLS = ["read_attachments"]
# An agent reads only what its capabilities declare (sync writes reads: [] for one that declares none).
CAPABILITIES = {
    "capabilities": {**BUILDER_CAPABILITIES["capabilities"], "read_attachments": {"reads": ["documents", "images"]}}
}
DRAWN = b"\x89PNG\r\n\x1a\n" + os.urandom(200_000)  # the agent's image: a chat row holding it would show
ANSWER = "Here is the chart."


class DrawingAgent:
    """An AG-UI agent on loopback: keeps every request (body and headers), answers with text and
    one aihub.image; with ``hold`` it then waits for ``release`` and never finishes its run."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.hold = False  # True: after the image, wait for `release` and end without RUN_FINISHED
        self.drew = threading.Event()  # set once an answer's image went out
        self.release = threading.Event()
        agent = self

        class Handler(SSEHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.read_body())
                agent.requests.append(body)
                agent.headers.append({k.lower(): v for k, v in self.headers.items()})
                ids = {"threadId": body.get("threadId"), "runId": body.get("runId")}
                self.start_stream()
                for event in (
                    {"type": "RUN_STARTED", **ids},
                    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": ANSWER},
                    {
                        "type": "CUSTOM",
                        "name": "aihub.image",
                        "value": {"mimeType": "image/png", "data": base64.b64encode(DRAWN).decode()},
                    },
                ):
                    self.send_event(event)
                agent.drew.set()
                if agent.hold:
                    agent.release.wait(120)
                    return
                self.send_event({"type": "RUN_FINISHED", **ids})
                self.end_stream()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/agent"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def sync(
    instance: OpenWebUIInstance,
    agent: DrawingAgent,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The agent synced as MODEL (through replica 1 of an HA instance)."""
    root = write_blueprint_dir(
        tmp_path / "blueprints",
        [blueprint("files", calls=CALLS, backend={"transport": "agui", "url": agent.url})],
        capabilities=CAPABILITIES,
    )
    monkeypatch.setenv("OPENWEBUI_URL", instance.replica_urls[0])
    monkeypatch.setenv("OPENWEBUI_TOKEN", instance.token)
    monkeypatch.delenv("OPENWEBUI_TOKEN_FILE", raising=False)
    bundle = write_function_dir(tmp_path / "functions", root, AGENT_PIPE)
    code, out, err = provision(capsys, "sync", "--yes", "-p", str(root), "--bundle", str(bundle))
    assert code == 0, out + err


def add_user(instance: OpenWebUIInstance, url: str, name: str) -> dict[str, Any]:
    body = {"name": name, "email": f"{name.lower()}-{uuid.uuid4().hex[:8]}@example.org", "role": "user"}
    with instance.client(url=url) as http:
        response = http.post("/api/v1/auths/add", json={**body, "password": uuid.uuid4().hex})
    assert response.status_code == 200, response.text
    return dict(response.json())


def upload(instance: OpenWebUIInstance, url: str, token: str, name: str, data: bytes, mime: str) -> dict[str, Any]:
    """Through Open WebUI's files API, as the browser uploads (no processing: the agent reads it)."""
    with instance.client(url=url, token=token) as http:
        response = http.post("/api/v1/files/", params={"process": "false"}, files={"file": (name, data, mime)})
    assert response.status_code == 200, response.text
    return dict(response.json())


def reference(file: dict[str, Any], kind: str) -> dict[str, Any]:
    """A message's file entry as the 0.12.4 browser writes it (an image's url is its file id)."""
    meta = file.get("meta") or {}
    ref = {
        "type": kind,
        "id": file["id"],
        "name": meta.get("name") or file["filename"],
        "status": "uploaded",
        "size": meta.get("size"),
        "content_type": meta.get("content_type"),
    }
    return {**ref, "url": file["id"]} if kind == "image" else ref


def received(request: dict[str, Any]) -> tuple[list[bytes], list[bytes]]:
    """(documents, images) of the last user message an AG-UI request carries."""
    content = [m for m in request["messages"] if m["role"] == "user"][-1]["content"]
    documents: list[bytes] = []
    images: list[bytes] = []
    for part in content if isinstance(content, list) else []:
        if part["type"] in ("document", "image") and part["source"]["type"] == "data":
            data = base64.b64decode(part["source"]["value"])
            (documents if part["type"] == "document" else images).append(data)
    return documents, images
