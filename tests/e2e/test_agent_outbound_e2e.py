"""What the agent shows beside its answer, through a real Open WebUI 0.12.4 (issue 20): the token
usage and the sources an agent sends are stored on the chat's message (`GET /api/v1/chats/{id}`,
what a reload shows) and the usage reaches Open WebUI's analytics, for both transports.

AG-UI: the session's scripted Agent Framework 1.7.0 server (tests/support/agui_server), scenario `cited`
(a tool round and a cited answer, usage reported per model call). OpenAI: a loopback
chat-completions server in this file that streams a `url_citation` annotation and a final usage
chunk, and records the request, so the test sees the pipe asked for the usage. The same server
also plays an agent that made an image, in both transports (OpenAI `delta.images`, AG-UI
`CUSTOM` "aihub.image"): Open WebUI stores it in its file store for the chat's user only, and the
chat row stays small.
"""

from __future__ import annotations

import base64
import json
import os
import threading
import uuid
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest

from demo_agents.sse_handler import SSEHandler
from tests.support.builders import blueprint, write_blueprint_dir, write_function_dir
from tests.support.chat_support import AGENT_PIPE, my_user_id, provision, stored_message, ui_turn

CALLS = ["web_research", "read_user_files", "summarise"]  # as test_agent_pipe_e2e (its toggle exists)
AGUI_MODEL = "aihub_agent_pipe.cited-agui.default"
OPENAI_MODEL = "aihub_agent_pipe.cited-openai.default"
OPENAI_USAGE = {"prompt_tokens": 41, "completion_tokens": 7, "total_tokens": 48}
NEWS = {"url": "https://news.example.org/paris?day=1", "title": "Paris <today> & tomorrow"}
IMAGE = b"\x89PNG\r\n\x1a\n" + os.urandom(300_000)  # big enough that a chat row holding it would show
IMAGE_URI = "data:image/png;base64," + base64.b64encode(IMAGE).decode()
DRAWN = "Here is the chart."


class ScriptedOpenAI:
    """A loopback OpenAI-compatible server: one canned streamed answer, every request recorded."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(SSEHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                server.requests.append({"path": self.path, "json": json.loads(self.read_body())})
                self.start_stream()
                if self.path == "/agui/draw":
                    for event in (
                        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": DRAWN},
                        {
                            "type": "CUSTOM",
                            "name": "aihub.image",
                            "value": {"mimeType": "image/png", "data": IMAGE_URI.split(",", 1)[1]},
                        },
                        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
                    ):
                        self.send_event(event)
                    self.end_stream()
                    return
                if self.path == "/draw/chat/completions":
                    chunk = {"id": "c2", "object": "chat.completion.chunk", "model": "draw"}
                    self.send_event({**chunk, "choices": [{"index": 0, "delta": {"content": DRAWN}}]})
                    self.send_event(
                        {
                            **chunk,
                            "choices": [
                                {
                                    "index": 0,
                                    "delta": {"images": [{"type": "image_url", "image_url": {"url": IMAGE_URI}}]},
                                }
                            ],
                        }
                    )
                    self.send_event("[DONE]")
                    self.end_stream()
                    return
                chunk = {"id": "c1", "object": "chat.completion.chunk", "model": "news"}
                citation = {"type": "url_citation", "url_citation": {**NEWS, "start_index": 0, "end_index": 5}}
                self.send_event(
                    {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Sunny"}}]}
                )
                self.send_event(
                    {
                        **chunk,
                        "choices": [{"index": 0, "delta": {"content": " today.", "annotations": [citation, citation]}}],
                    }
                )
                self.send_event({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                self.send_event({**chunk, "choices": [], "usage": OPENAI_USAGE})
                self.send_event("[DONE]")
                self.end_stream()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.root = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.url = f"{self.root}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def openai_backend() -> Iterator[ScriptedOpenAI]:
    backend = ScriptedOpenAI()
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def outbound_bundle(
    tmp_path_factory: pytest.TempPathFactory, agui_server: Any, openai_backend: ScriptedOpenAI
) -> list[str]:
    tmp = tmp_path_factory.mktemp("outbound-e2e")
    prints = [
        blueprint("cited-agui", calls=CALLS, backend={"transport": "agui", "url": agui_server.agent_url}),
        blueprint(
            "cited-openai", calls=CALLS, backend={"transport": "openai", "url": openai_backend.url, "model": "news"}
        ),
        blueprint(
            "draw-openai",
            calls=CALLS,
            backend={"transport": "openai", "url": f"{openai_backend.root}/draw", "model": "draw"},
        ),
        blueprint("draw-agui", calls=CALLS, backend={"transport": "agui", "url": f"{openai_backend.root}/agui/draw"}),
        blueprint("approve", calls=CALLS, backend={"transport": "agui", "url": agui_server.agent_url}),
    ]
    root = write_blueprint_dir(tmp / "blueprints", prints)
    return ["-p", str(root), "--bundle", str(write_function_dir(tmp / "functions", root, AGENT_PIPE))]


@pytest.fixture
def synced(owui: Any, outbound_bundle: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    code, out, err = provision(capsys, "sync", *outbound_bundle)
    assert code == 0, out + err
    return owui


def token_analytics(owui: Any, model: str) -> tuple[int, int]:
    """(input, output) tokens Open WebUI's analytics count for ``model`` (admin: the session login)."""
    with owui.client(token=owui.admin_jwt) as http:
        models = http.get("/api/v1/analytics/tokens").raise_for_status().json()["models"]
    entry = next((m for m in models if m["model_id"] == model), {"input_tokens": 0, "output_tokens": 0})
    return entry["input_tokens"], entry["output_tokens"]


def test_agui_usage_and_citation_are_stored_on_the_message_and_counted(synced: Any, agui_server: Any) -> None:
    before = token_analytics(synced, AGUI_MODEL)
    chat_id, _, answer = ui_turn(synced, AGUI_MODEL, "scenario:cited", chat_id=None, parent_id=None, first=True)
    stored = stored_message(synced, chat_id, answer)  # what a reload of the chat shows
    assert "It is sunny in Paris." in stored["content"] and 'name="get_weather"' in stored["content"]
    usage = stored["usage"]
    # two model calls, 10 + 20 in and 3 + 6 out (tests/support/agui_server/app.py SCRIPTS["cited"])
    assert (usage["input_tokens"], usage["output_tokens"], usage["total_tokens"]) == (30, 9, 39)
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (30, 9)
    (source,) = stored["sources"]  # the agent cited it twice: one chip
    assert source["source"] == {
        "name": "Weather &lt;Paris&gt; &amp; more",
        "url": "https://weather.example.org/paris?d=today",
    }
    assert source["document"] == ["Sunny, 21 °C"]
    after = token_analytics(synced, AGUI_MODEL)
    assert (after[0] - before[0], after[1] - before[1]) == (30, 9)


def test_openai_usage_and_url_citation_are_stored_on_the_message_and_counted(
    synced: Any, openai_backend: ScriptedOpenAI
) -> None:
    before = token_analytics(synced, OPENAI_MODEL)
    openai_backend.requests.clear()
    chat_id, _, answer = ui_turn(synced, OPENAI_MODEL, "What is the weather?", chat_id=None, parent_id=None, first=True)
    (request,) = openai_backend.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["json"]["stream_options"] == {"include_usage": True}
    stored = stored_message(synced, chat_id, answer)
    assert stored["content"] == "Sunny today."
    usage = stored["usage"]
    assert {key: usage[key] for key in OPENAI_USAGE} == OPENAI_USAGE
    assert (usage["input_tokens"], usage["output_tokens"]) == (41, 7)
    (source,) = stored["sources"]
    assert source["source"] == {"name": "Paris &lt;today&gt; &amp; tomorrow", "url": NEWS["url"]}
    after = token_analytics(synced, OPENAI_MODEL)
    assert (after[0] - before[0], after[1] - before[1]) == (41, 7)


@pytest.fixture
def other_user(synced: Any) -> Iterator[str]:
    """A second user's token (a plain user, not in the chat)."""
    with synced.client() as http:
        user = (
            http.post(
                "/api/v1/auths/add",
                json={
                    "name": "Other",
                    "email": f"other-{uuid.uuid4().hex[:8]}@example.com",
                    "password": "Pw-0ther-user!",
                    "role": "user",
                },
            )
            .raise_for_status()
            .json()
        )
    yield user["token"]
    with synced.client() as http:
        http.delete(f"/api/v1/users/{user['id']}")


@pytest.mark.parametrize("transport", ["openai", "agui"])
def test_an_image_the_agent_made_is_stored_for_the_chats_user_only(
    synced: Any, other_user: str, transport: str
) -> None:
    model = f"aihub_agent_pipe.draw-{transport}.default"
    chat_id, _, answer = ui_turn(synced, model, "Draw the chart.", chat_id=None, parent_id=None, first=True)
    stored = stored_message(synced, chat_id, answer)
    assert stored["content"] == DRAWN  # no base64 in the text
    (image,) = [f for f in stored.get("files") or [] if f.get("type") == "image"]
    url = image["url"]
    assert url.startswith("/api/v1/files/") and url.endswith("/content")
    with synced.client() as http:  # the chat's user (the admin's API key made the chat)
        response = http.get(url)
        assert response.status_code == 200 and response.content == IMAGE
        record = http.get(url.removesuffix("/content")).raise_for_status().json()
        assert record["user_id"] == my_user_id(synced)  # owned by the chat's user
        chat = http.get(f"/api/v1/chats/{chat_id}").raise_for_status().json()
    assert len(json.dumps(chat)) < 50_000 < len(IMAGE)  # the chat row holds the file's URL, not its bytes
    with synced.client(token=other_user) as http:
        assert http.get(url).status_code in (403, 404)
        assert http.get(url.removesuffix("/content")).status_code in (403, 404)


def test_a_tool_that_needs_approval_never_runs_for_a_client_without_a_browser(synced: Any, agui_server: Any) -> None:
    """A chat request with no live browser tab behind it (Open WebUI's event call answers
    "Client session disconnected."): the same run is resumed as cancelled, never as an approval
    (issue 32), and the tool's block says why it did not run."""
    agui_server.clear()
    chat_id, _, answer = ui_turn(
        synced, "aihub_agent_pipe.approve.default", "scenario:approval", chat_id=None, parent_id=None, first=True
    )
    stored = stored_message(synced, chat_id, answer)
    assert agui_server.booked() == []
    assert "Not run: the agent asked for an answer, which only a chat in the browser can give." in stored["content"]
    assert "confirm_changes" not in stored["content"] and "Executing..." not in stored["content"]
    assert "Agent error" not in stored["content"]
    first, resumed = agui_server.recorded()
    assert resumed["threadId"] == first["threadId"] == chat_id
    assert resumed["resume"][0]["status"] == "cancelled"
    assert resumed["resume"][0].get("payload") != {"approved": True}
