"""Each framework's own AG-UI server (tests/support/frameworks/) runs the pinned versions and answers.

The behaviours through the pipe are tests/functions/test_framework_matrix.py's; this checks the
harness itself: the venv holds exactly what the app file pins, and the server streams a run.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

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
