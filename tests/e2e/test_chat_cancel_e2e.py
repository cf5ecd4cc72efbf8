"""A stopped chat ends the agent's request at once, through a real Open WebUI 0.12.4.

The agent is a loopback AG-UI server that streams a text delta every 50 ms for 10 s and watches
its socket. Two ways a chat stops:
- the user presses stop: the UI's chat runs as a background task (the request carries a
  `session_id`, a `chat_id` comes back with the task ids) and the stop button calls
  `POST /api/tasks/chat/{chat_id}/stop`, which cancels that task;
- an API client stops reading a streaming `/api/chat/completions` and closes the connection.
Either way the agent must see its connection close within a second, not stream on for 10 s.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.chat_support import AGENT_PIPE
from tests.support.slow_agent import SlowAgent

PIPE_ID = "aihub_agent_pipe"
MODEL = f"{PIPE_ID}.bp.slow"


@pytest.fixture
def slow_agent() -> Iterator[SlowAgent]:
    agent = SlowAgent()
    yield agent
    agent.close()


@pytest.fixture
def owui_with_slow_agent(clean_openwebui: Any, slow_agent: SlowAgent) -> Any:
    """The real pipe, active, serving one agent on the slow AG-UI server."""
    form = {
        "id": PIPE_ID,
        "name": "AI Hub Agent Pipe",
        "content": AGENT_PIPE.read_text(encoding="utf-8"),
        "meta": {"description": "e2e"},
    }
    agents = [{"id": "bp.slow", "name": "Slow", "transport": "agui", "url": slow_agent.url, "features": []}]
    with clean_openwebui.client() as http:
        http.post("/api/v1/functions/create", json=form).raise_for_status()
        assert http.post(f"/api/v1/functions/id/{PIPE_ID}/toggle").raise_for_status().json()["is_active"]
        http.post(
            f"/api/v1/functions/id/{PIPE_ID}/valves/update",
            json={"AGENTS": json.dumps(agents), "API_KEYS": "{}", "TIMEOUT_SECONDS": 60},
        ).raise_for_status()
        listed = [
            m["id"] for m in http.get("/api/models", params={"refresh": "true"}).raise_for_status().json()["data"]
        ]
    assert MODEL in listed, listed
    return clean_openwebui


def assert_agent_saw_the_end_at_once(agent: SlowAgent, stopped_at: float) -> None:
    assert agent.disconnected.wait(5), f"the agent streamed on after the stop ({agent.deltas} deltas)"
    assert agent.disconnected_at - stopped_at < 1.0, agent.disconnected_at - stopped_at
    assert agent.deltas < 100  # 10 s of streaming would be ~200


def test_stop_button_closes_the_agent_request_at_once(owui_with_slow_agent: Any, slow_agent: SlowAgent) -> None:
    user_message: dict[str, Any] = {
        "id": str(uuid.uuid4()),
        "parentId": None,
        "childrenIds": [],
        "role": "user",
        "content": "hi",
        "timestamp": int(time.time()),
    }
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        # what the UI sends for a new chat: it then runs as a background task, streamed over the socket
        "parent_id": None,
        "id": str(uuid.uuid4()),
        "session_id": f"pytest-{uuid.uuid4().hex}",
        "user_message": user_message,
    }
    with owui_with_slow_agent.client(timeout=30) as http:
        started = http.post("/api/chat/completions", json=body).raise_for_status().json()
        assert started["task_ids"], started
        chat_id = started["chat_id"]
        assert slow_agent.started.wait(15), "the agent was never called"
        time.sleep(0.3)  # the answer is streaming
        assert not slow_agent.disconnected.is_set()
        stopped_at = time.monotonic()
        http.post(f"/api/tasks/chat/{chat_id}/stop").raise_for_status()
        assert_agent_saw_the_end_at_once(slow_agent, stopped_at)
        assert http.get(f"/api/tasks/chat/{chat_id}").raise_for_status().json()["task_ids"] == []


def test_api_client_hanging_up_closes_the_agent_request_at_once(
    owui_with_slow_agent: Any, slow_agent: SlowAgent
) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    owui = owui_with_slow_agent
    with httpx.Client(
        base_url=owui.url, headers={"Authorization": f"Bearer {owui.token}"}, timeout=30, trust_env=False
    ) as http:
        with http.stream("POST", "/api/chat/completions", json=body) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if line.startswith("data:") and "more" in line:
                    break  # the answer is streaming
            stopped_at = time.monotonic()
        # leaving the block closes the connection; Open WebUI then cancels the pipe's generator
    assert_agent_saw_the_end_at_once(slow_agent, stopped_at)
