"""The agent dying mid-turn (issue 29, "not yet tried, and expected to hold"): while the pipe is
still sending it the user's file, and after it sent an image but before its run finished.

A loopback server on a raw socket plays the agent and closes the connection at that point. Both
held when first tried (2026-12-07): the chat gets one clear error, at once, and no hang; what the
agent finished before it died (its text, its image) is kept and the image stored, with the error
saying the answer is incomplete.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.pipe_support import FakeStore, drive, make_pipe, pipe_module

P = pipe_module
IMAGE = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 10
ANSWER = "Drawing."


class DyingAgent:
    """Accepts one request at a time and dies: ``mid_body`` after 300 KB of the request body,
    ``after_image`` once it has streamed text and an image (no RUN_FINISHED)."""

    def __init__(self, how: str) -> None:
        self.how = how
        self.received = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/agent"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                self.received = len(data.partition(b"\r\n\r\n")[2])
                if self.how == "mid_body":
                    while self.received < 300_000 and (piece := conn.recv(65536)):
                        self.received += len(piece)
                else:
                    self._answer_then_die(conn)
                conn.shutdown(socket.SHUT_RDWR)

    def _answer_then_die(self, conn: socket.socket) -> None:
        value = {"mimeType": "image/png", "data": base64.b64encode(IMAGE).decode()}
        stream = [
            {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": ANSWER},
            {"type": "CUSTOM", "name": "aihub.image", "value": value},
        ]
        body = "".join(f"data: {json.dumps(e)}\n\n" for e in stream).encode()
        head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        conn.sendall(head + f"{len(body):x}\r\n".encode() + body + b"\r\n")  # no last chunk: it dies
        time.sleep(0.2)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def agent(request: pytest.FixtureRequest) -> Iterator[DyingAgent]:
    dying = DyingAgent(request.param)
    yield dying
    dying.close()


def _chat(agent: DyingAgent, file_mb: float = 3) -> tuple[Any, float]:
    store = FakeStore()
    ref = store.add("f-1", "big.bin", "application/octet-stream", b"x" * int(file_mb * P.MB))
    pipe = make_pipe([{"id": "docs.analyst", "name": "Analyst", "url": agent.url}], timeout=20)
    pipe.store = store
    started = time.monotonic()
    run = asyncio.run(drive(pipe, "docs.analyst", [{"role": "user", "content": "Read"}], metadata={"files": [ref]}))
    return run, time.monotonic() - started


@pytest.mark.parametrize("agent", ["mid_body"], indirect=True)
def test_an_agent_that_dies_while_the_file_is_sent_ends_the_turn_at_once_with_one_error(
    agent: DyingAgent, stored_images: list
) -> None:
    run, took = _chat(agent)
    assert 300_000 <= agent.received < 3 * P.MB  # it died part-way through the file
    assert took < 10  # not the 20 s timeout
    assert run.content.startswith("> [!CAUTION]\n> Agent error: The connection to the agent")
    assert "broke before it answered" in run.content
    assert run.content.count("[!CAUTION]") == 1
    assert stored_images == []


@pytest.mark.parametrize("agent", ["after_image"], indirect=True)
def test_an_agent_that_dies_after_its_image_keeps_the_text_and_the_image_and_says_it_is_incomplete(
    agent: DyingAgent, stored_images: list
) -> None:
    run, took = _chat(agent, file_mb=0.01)
    assert took < 10
    text, _, error = run.content.partition("\n\n> [!CAUTION]\n")
    assert text == ANSWER
    assert "broke while it was answering" in error and "The answer above is incomplete." in error
    assert stored_images == [[("image/png", IMAGE)]]
    files = [f for e in run.events if e.get("type") == "files" for f in e["data"]["files"]]
    assert files == [{"type": "image", "url": "/api/v1/files/f0/content"}]
