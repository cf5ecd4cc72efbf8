"""Helpers the e2e tests share: run the CLI in-process, read the instance, chat through the
real bundle and see each chat from both ends (the AG-UI server's record and the observer's).

The fixtures built on them live in conftest.py.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

import provisioner.cli as cli
from tests.support.builders import REPO, SAMPLE_MODEL_IDS
from tests.support.owui_instance import OpenWebUIInstance

AGENT_PIPE = REPO / "owui_functions" / "aihub_agent_pipe.py"
OBSERVER = REPO / "tests" / "e2e" / "fixtures" / "observer_filter.py"
OBSERVER_ID = "zz_test_observer"
AGENT_ANSWER = "Hello from the scripted agent."  # the scripted agent's reply to a plain message
SAMPLE_MODELS = frozenset(SAMPLE_MODEL_IDS)
TOGGLE = "aihub_toggle_user_files"
# The browser's features dict (Chat.svelte getFeatures) with Web Search on.
UI_FEATURES = {"voice": False, "image_generation": False, "code_interpreter": False, "web_search": True}


def provision(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def get(owui, path: str, **params: Any) -> Any:
    with owui.client() as http:
        return http.get(path, params=params).raise_for_status().json()


@dataclass
class Seen:
    """One chat request from both ends: what reached the agent and what Open WebUI kept."""

    run: dict[str, Any]  # the RunAgentInput the AG-UI server received
    observed: dict[str, Any]  # the observer's record, taken after every filter of the bundle ran

    @property
    def forwarded(self) -> list[str]:
        """The features the agent was asked for (`forwardedProps.features`)."""
        return self.run["forwardedProps"]["features"]

    @property
    def requested(self) -> Any:
        """`__metadata__["aihub_requested_features"]` after the filters: what the pipe reads."""
        return self.observed["requested"]

    @property
    def features(self) -> dict[str, Any]:
        """Open WebUI's own `features` dict after the filters: what it acts on afterwards."""
        return self.observed["features"]

    @property
    def model(self) -> str:
        return self.observed["model"]


@dataclass
class ChatRig:
    """A synced Open WebUI whose agents run on the scripted AG-UI server, the observer on."""

    owui: Any
    server: Any  # tests/support/agui_server/harness.py AguiServer
    log: Path  # the observer's JSON lines

    def client(self, **kwargs: Any) -> httpx.Client:
        return self.owui.client(**kwargs)

    def clear(self) -> None:
        self.server.clear()
        self.log.write_text("", encoding="utf-8")

    def observed(self) -> list[dict[str, Any]]:
        """The observer's records since `clear()`, Open WebUI's housekeeping tasks left out."""
        lines = self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []
        return [record for record in map(json.loads, filter(None, lines)) if not record.get("task")]

    def one_request(self) -> Seen:
        """The single agent run and the single observed request since `clear()`."""
        runs, observed = self.server.recorded(), self.observed()
        assert len(runs) == 1 and len(observed) == 1, (runs, observed)
        return Seen(runs[0], observed[0])


def install_observer(owui, log: Path) -> None:
    """Upload the observer filter: active, global (it runs for every model), writing to `log`."""
    form = {
        "id": OBSERVER_ID,
        "name": "Test observer",
        "content": OBSERVER.read_text(encoding="utf-8"),
        "meta": {"description": "e2e only"},
    }
    with owui.client() as http:
        http.post("/api/v1/functions/create", json=form).raise_for_status()
        assert http.post(f"/api/v1/functions/id/{OBSERVER_ID}/toggle").raise_for_status().json()["is_active"]
        assert http.post(f"/api/v1/functions/id/{OBSERVER_ID}/toggle/global").raise_for_status().json()["is_global"]
        http.post(f"/api/v1/functions/id/{OBSERVER_ID}/valves/update", json={"path": str(log)}).raise_for_status()


def chat(
    rig: ChatRig,
    model: str,
    *,
    features: dict | None = None,
    filter_ids: list[str] | None = None,
    extra: dict | None = None,
) -> Seen:
    """One API chat completion through the real pipe to the agent, seen from both ends."""
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": False}
    if features is not None:
        body["features"] = features
    if filter_ids is not None:
        body["filter_ids"] = filter_ids
    body.update(extra or {})
    rig.clear()
    with rig.client(timeout=60) as http:
        response = http.post("/api/chat/completions", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == AGENT_ANSWER, response.text
    seen = rig.one_request()
    assert seen.model == model
    return seen


# --- one chat turn as the browser or a plain API client sends it ---------------------------------


def my_user_id(owui: OpenWebUIInstance) -> str:
    """The admin's id (`/api/v1/auths/` wants a login session: an API key gets 403 there)."""
    assert owui.admin_jwt, "the instance state has no admin login"
    with owui.client(token=owui.admin_jwt) as http:
        return http.get("/api/v1/auths/").raise_for_status().json()["id"]


def api_chat(owui: OpenWebUIInstance, model: str, messages: list[dict[str, Any]], **extra: Any) -> str:
    """A plain API client's chat completion (no chat id): the answer's content."""
    body = {"model": model, "messages": messages, "stream": False, **extra}
    with owui.client(timeout=120) as http:
        response = http.post("/api/chat/completions", json=body)
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]["message"]["content"]


def ui_body(
    model: str,
    text: str,
    *,
    user_id: str,
    assistant_id: str,
    parent_id: str | None,
    first: bool,
    files: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The completion request the 0.12.4 browser posts for one message (no history: the server
    loads it); `files` go on the user message and in the request, as the page sends an attachment."""
    user_message: dict[str, Any] = {
        "id": user_id,
        "parentId": parent_id,
        "childrenIds": [],
        "role": "user",
        "content": text,
        "timestamp": int(time.time()),
        "models": [model],
    }
    if files is not None:
        user_message["files"] = files
    body: dict[str, Any] = {
        "stream": True,
        "model": model,
        "params": {},
        "filter_ids": [TOGGLE],
        "tool_ids": [],
        "features": dict(UI_FEATURES),
        "variables": {},
        "session_id": f"e2e-{uuid.uuid4().hex[:12]}",  # the browser's socket id
        "id": assistant_id,
        "message_ids": [{"model_id": model, "message_id": assistant_id, "modelIdx": 0}],
        "parent_id": parent_id,
        "user_message": user_message,
        # housekeeping the browser asks for; the pipe answers these without calling the agent
        "background_tasks": {"title_generation": True, "tags_generation": True, "follow_up_generation": True}
        if first
        else {"follow_up_generation": True},
    }
    if files is not None:
        body["files"] = files  # the chat's files, the new message's among them
    return body


def ui_turn(
    owui: OpenWebUIInstance, model: str, text: str, *, chat_id: str | None, parent_id: str | None, first: bool
) -> tuple[str, str, str]:
    """Send one message as the 0.12.4 browser does and wait for the stored answer.

    Returns (chat id, user message id, assistant message id).
    """
    user_id, assistant_id = str(uuid.uuid4()), str(uuid.uuid4())
    body = ui_body(model, text, user_id=user_id, assistant_id=assistant_id, parent_id=parent_id, first=first)
    if chat_id:
        body["chat_id"] = chat_id
    with owui.client(timeout=60) as http:
        response = http.post("/api/chat/completions", json=body)
        assert response.status_code == 200, response.text
        answer = response.json()
        assert answer.get("status") is True and answer.get("task_ids"), answer  # runs in the background
        chat_id = answer["chat_id"]
        stored_message(owui, chat_id, assistant_id)  # waits until the answer is done
    return chat_id, user_id, assistant_id


def stored_message(
    owui: OpenWebUIInstance, chat_id: str, message_id: str, timeout: float = 60, token: str | None = None
) -> dict[str, Any]:
    """The stored message once Open WebUI marked it done (the background task finished), read as
    the chat's user (`token`; default: the admin's API key).

    Open WebUI 0.6 and 0.7 never store `done` (their page keeps it): there the message counts as
    finished once its answer is stored and the chat has no task left.
    """
    deadline = time.monotonic() + timeout
    message: dict[str, Any] = {}
    with owui.client(token=token) as http:
        while time.monotonic() < deadline:
            chat = http.get(f"/api/v1/chats/{chat_id}").raise_for_status().json()
            message = chat["chat"]["history"]["messages"].get(message_id) or {}
            if message.get("done"):
                return message
            if message.get("content") or message.get("output"):
                if not http.get(f"/api/tasks/chat/{chat_id}").raise_for_status().json().get("task_ids"):
                    return message
            time.sleep(0.2)
    pytest.fail(f"the answer was not stored as done within {timeout:g}s; last seen: {message}\n{owui.log_tail()}")
