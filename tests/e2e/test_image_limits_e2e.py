"""An agent that floods an answer with images, through a real Open WebUI 0.12.4 (issue 29, point 1).

The adversarial run stored 21 files in the user's name for one answer of 21 image events (about
105 MB on disk). Here a loopback agent sends 21 images of 300 KB each (AG-UI ``aihub.image``, or
OpenAI ``delta.images``): Open WebUI's file store gains exactly MAX_IMAGES (10) files, the
message holds those 10, and its text says once that the rest are not shown.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest

from demo_agents.sse_handler import SSEHandler
from tests.support.builders import blueprint, write_blueprint_dir, write_function_dir
from tests.support.chat_support import AGENT_PIPE, provision, stored_message, ui_turn

COUNT = 21
IMAGES = [b"\x89PNG\r\n\x1a\n" + hashlib.sha256(bytes([n])).digest() * 9_375 for n in range(COUNT)]  # 300 KB each
LEFT_OUT = "The agent made more images than one answer shows (at most 10 images per answer"


class FloodingAgent:
    """``/agui``: 21 ``aihub.image`` events; ``/openai/chat/completions``: 21 ``delta.images``."""

    def __init__(self) -> None:
        class Handler(SSEHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                self.read_body()
                self.start_stream()
                if self.path.endswith("/chat/completions"):
                    chunk = {"id": "c", "object": "chat.completion.chunk", "model": "flood"}
                    self.send_event({**chunk, "choices": [{"index": 0, "delta": {"content": "Drawn."}}]})
                    for image in IMAGES:
                        url = "data:image/png;base64," + base64.b64encode(image).decode()
                        part = {"type": "image_url", "image_url": {"url": url}}
                        self.send_event({**chunk, "choices": [{"index": 0, "delta": {"images": [part]}}]})
                    self.send_event("[DONE]")
                else:
                    self.send_event({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
                    self.send_event({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "Drawn."})
                    for image in IMAGES:
                        value = {"mimeType": "image/png", "data": base64.b64encode(image).decode()}
                        self.send_event({"type": "CUSTOM", "name": "aihub.image", "value": value})
                    self.send_event({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
                self.end_stream()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.root = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def synced(owui: Any, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> Iterator[Any]:
    agent = FloodingAgent()
    backends = {
        "flood-agui": {"transport": "agui", "url": f"{agent.root}/agui"},
        "flood-openai": {"transport": "openai", "url": f"{agent.root}/openai", "model": "flood"},
    }
    root = write_blueprint_dir(
        tmp_path / "blueprints",
        [blueprint(bp_id, calls=["summarise"], backend=backend) for bp_id, backend in backends.items()],
    )
    code, out, err = provision(
        capsys, "sync", "-p", str(root), "--bundle", str(write_function_dir(tmp_path / "functions", root, AGENT_PIPE))
    )
    assert code == 0, out + err
    yield owui
    agent.stop()


def _files(owui: Any) -> list[dict[str, Any]]:
    with owui.client() as http:
        found = http.get("/api/v1/files/").raise_for_status().json()
    return found if isinstance(found, list) else found.get("items", [])


@pytest.mark.parametrize("transport", ["agui", "openai"])
def test_one_answer_stores_at_most_max_images(synced: Any, transport: str) -> None:
    before = {f["id"] for f in _files(synced)}
    chat_id, _, answer = ui_turn(
        synced,
        f"aihub_agent_pipe.flood-{transport}.default",
        "Draw them all.",
        chat_id=None,
        parent_id=None,
        first=True,
    )
    stored = stored_message(synced, chat_id, answer)
    images = [f for f in stored.get("files") or [] if f.get("type") == "image"]
    added = [f for f in _files(synced) if f["id"] not in before]
    assert len(images) == 10 and len(added) == 10
    assert stored["content"].startswith("Drawn.") and stored["content"].count(LEFT_OUT) == 1
    with synced.client() as http:
        assert http.get(images[0]["url"]).raise_for_status().content == IMAGES[0]
