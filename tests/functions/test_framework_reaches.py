"""What docs/agent-frameworks.md says reaches an agent's own code does (the apps' REACHES).

CrewAI: ag-ui-crewai sets the flow's id to the AG-UI threadId and every forwardedProps key the
flow's state declares (the pipe sends user_id and message_id) on the state; its STATE_SNAPSHOT
shows the state the flow's methods read.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from tests.support.frameworks.testing import started

pytestmark = pytest.mark.agui
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def test_crewai_flow_state_holds_the_thread_id_and_the_pipes_forwarded_ids(framework_servers: Any) -> None:
    server = started(framework_servers, "crewai")
    body = {
        "threadId": "chat-77",
        "runId": "m-9",
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {"features": [], "user_id": "user-42", "message_id": "m-9", "user_message_id": "m-8"},
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
    events = [json.loads(line[5:]) for line in raw.splitlines() if line.startswith("data:")]
    state = [e["snapshot"] for e in events if e["type"] == "STATE_SNAPSHOT"][-1]
    assert (state["id"], state["user_id"], state["message_id"]) == ("chat-77", "user-42", "m-9")
