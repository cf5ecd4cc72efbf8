"""What docs/agent-frameworks.md says reaches an agent's own code does (the apps' REACHES).

CrewAI: ag-ui-crewai sets the flow's id to the AG-UI threadId and every forwardedProps key the
flow's state declares (the pipe sends user_id and message_id) on the state; its STATE_SNAPSHOT
shows the state the flow's methods read. The others: the tool the page shows reads the chat id,
the user and the signed identity header the way the page says, and records what it read.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from tests.support.frameworks.testing import started

pytestmark = pytest.mark.agui
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


IDENTITY = "v1.eyJzdWIiOiJ1c2VyLTQyIn0.c2lnbmF0dXJl"  # stands for the pipe's signed identity header


def _run(server: Any, text: str, **headers: str) -> list[dict[str, Any]]:
    body = {
        "threadId": "chat-77",
        "runId": "m-9",
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {"features": [], "user_id": "user-42", "message_id": "m-9", "user_message_id": "m-8"},
        "messages": [{"id": "u-1", "role": "user", "content": text}],
        "protocolVersion": "1.0",
    }
    request = urllib.request.Request(
        server.agent_url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"content-type": "application/json", "accept": "text/event-stream", **headers},
    )
    with _HTTP.open(request, timeout=60) as response:
        raw = response.read().decode()
    return [json.loads(line[5:]) for line in raw.splitlines() if line.startswith("data:")]


def test_crewai_flow_state_holds_the_thread_id_and_the_pipes_forwarded_ids(framework_servers: Any) -> None:
    events = _run(started(framework_servers, "crewai"), "scenario:stream")
    state = [e["snapshot"] for e in events if e["type"] == "STATE_SNAPSHOT"][-1]
    assert (state["id"], state["user_id"], state["message_id"]) == ("chat-77", "user-42", "m-9")


@pytest.mark.parametrize(
    "name", ["adk", "agent_framework", "agno", "langgraph", "llamaindex", "pydantic_ai", "strands"]
)
def test_a_tool_reads_the_chat_id_the_user_and_the_signed_identity(framework_servers: Any, name: str) -> None:
    server = started(framework_servers, name)
    server.clear()
    events = _run(server, "scenario:tool", **{"X-AIHub-Identity": IDENTITY})
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    assert server.reached() == [{"thread_id": "chat-77", "user_id": "user-42", "identity": IDENTITY}]
