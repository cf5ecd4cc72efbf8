"""Each framework's own AG-UI server (tests/support/frameworks/) runs the pinned versions and answers.

The behaviours through the pipe are tests/functions/test_framework_matrix.py's; this checks the
harness itself: the venv holds exactly what the app file pins, and the server streams a run.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.request
import uuid
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.support.frameworks import harness
from tests.support.frameworks.testing import started

pytestmark = pytest.mark.agui
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.mark.parametrize("name", list(harness.frameworks()))
def test_the_server_runs_the_pinned_versions_and_streams_a_run(framework_servers: Any, name: str) -> None:
    server = started(framework_servers, name)
    pins = {pin.split("==")[0].split("[")[0]: pin.split("==")[1] for pin in server.framework.pins}
    assert {package: pins[package] for package in server.health()} == server.health()
    assert set(harness.installed(name)["pins"]) == set(server.framework.pins)
    body = {
        "threadId": f"smoke-{name}",
        "runId": "r-1",
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
        "messages": [{"id": "u-1", "role": "user", "content": "scenario:stream"}],
    }
    request = urllib.request.Request(
        server.agent_url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"content-type": "application/json", "accept": "text/event-stream"},
    )
    with _HTTP.open(request, timeout=60) as response:
        raw = response.read().decode()
    types = [json.loads(line[5:])["type"] for line in raw.splitlines() if line.startswith("data:")]
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED"
    assert "Hello" in raw and " agent." in raw
    assert server.recorded()[0]["threadId"] == f"smoke-{name}"
    # the model gets the user's text as its framework frames it (CrewAI: "\nCurrent Task: scenario:stream")
    user_texts = [m["text"] for m in server.model_calls()[0] if m["role"] == "user"]
    assert len(user_texts) == 1 and user_texts[0].strip().endswith("scenario:stream")


def _run_body(thread: str, text: str) -> bytes:
    return json.dumps(
        {
            "threadId": thread,
            "runId": "r-1",
            "state": {},
            "tools": [],
            "context": [],
            "forwardedProps": {},
            "messages": [{"id": f"u-{thread}", "role": "user", "content": text}],
        }
    ).encode()


@pytest.mark.parametrize("name", list(harness.frameworks()))
def test_a_run_whose_request_came_in_before_a_clear_records_nothing_after_it(framework_servers: Any, name: str) -> None:
    """The tests share each server for the session, and a run may go on after its test (the pipe
    hangs up on a probe at its first event, some frameworks call their model after that): what it
    records must not land in the next test's records. Here the clear falls between the request's
    arrival and its body, so all of its run happens after the clear."""
    server = started(framework_servers, name)
    url = urlsplit(server.agent_url)
    body = _run_body(f"before-clear-{uuid.uuid4().hex[:8]}", "scenario:tool")
    head = (
        f"POST {url.path} HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Type: application/json\r\n"
        f"Accept: text/event-stream\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    arrived = server.arrived()
    with socket.create_connection((url.hostname, url.port), timeout=60) as conn:
        conn.sendall(head + body[:20])
        deadline = time.monotonic() + 30
        while server.arrived() == arrived:  # the server has the request (its headers), not all of its body
            assert time.monotonic() < deadline, "the server never took the request"
            time.sleep(0.02)
        server.clear()
        conn.sendall(body[20:])
        answer = b""
        while piece := conn.recv(65536):
            answer += piece
    assert b"RUN_FINISHED" in answer and b"order 10023 shipped" in answer, answer[-500:]
    assert (server.recorded(), server.model_calls(), server.ran()) == ([], [], [])
    # a request that comes in after the clear is recorded whole: its body, the model calls, the tool
    request = urllib.request.Request(
        server.agent_url,
        data=_run_body(f"after-clear-{uuid.uuid4().hex[:8]}", "scenario:tool"),
        method="POST",
        headers={"content-type": "application/json", "accept": "text/event-stream"},
    )
    with _HTTP.open(request, timeout=60) as response:
        assert b"RUN_FINISHED" in response.read()
    assert len(server.recorded()) == 1 and len(server.model_calls()) == 2
    assert server.ran() == [{"name": "lookup_order", "args": {"order": "10023"}}]
