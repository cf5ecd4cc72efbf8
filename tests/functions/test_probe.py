"""The pipe's admin probe (`provision doctor`, issue 31): honoured only for role admin, it reaches
the agent's backend from the pipe's side with the agent's key and nothing of any user (no
messages, identity, OAuth token), and answers one JSON object: reached or not, and why."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest

from demo_agents.sse_handler import SSEHandler, serve_loopback, stop_loopback
from tests.support.builders import closed_port
from tests.support.pipe_support import make_pipe

KEY = "probe-backend-key-0123456789abcdef"
ADMIN = {"id": "u-admin", "role": "admin", "name": "Ada", "email": "ada@example.com"}


class Backend:
    """A loopback backend answering as told; it records what each request carried."""

    def __init__(self, mode: str) -> None:
        self.requests: list[dict[str, Any]] = []
        backend = self

        class Handler(SSEHandler):
            def _record(self, body: bytes) -> None:
                backend.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": dict(self.headers),
                        "body": json.loads(body) if body else None,
                    }
                )

            def _page(self) -> None:  # a web app where the agent should be
                page = b"<!doctype html><html><body>Welcome</body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def do_GET(self) -> None:  # noqa: N802 (http.server's method name)
                self._record(b"")
                if mode == "openai":
                    self.send_json({"object": "list", "data": [{"id": "m"}]})
                elif mode == "openai-many":  # a router's list: thousands of models, far over 64 KB
                    self.send_json({"object": "list", "data": [{"id": f"vendor/model-{i}"} for i in range(5000)]})
                elif mode == "json":
                    self.send_json({"hello": "world"})
                elif mode == "html":
                    self._page()
                else:
                    self.send_json({"detail": "Not Found"}, 404)

            def do_POST(self) -> None:  # noqa: N802 (http.server's method name)
                self._record(self.read_body())
                if mode == "401":
                    self.send_json({"detail": f"bad key {KEY}"}, 401)
                elif mode == "json":
                    self.send_json({"hello": "world"})
                elif mode == "html":
                    self._page()
                elif mode == "openai-stream":  # an OpenAI chat completion's stream: SSE, no AG-UI event
                    self.start_stream()
                    self.send_event({"object": "chat.completion.chunk", "choices": []})
                    self.end_stream()
                else:
                    self.start_stream()
                    started = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
                    if mode == "agui-1.0":  # AG-UI 1.0 names its version on RUN_STARTED
                        started["protocolVersion"] = "1.0"
                    self.send_event(started)
                    self.send_event({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
                    self.end_stream()

        self.server, self.base = serve_loopback(Handler)

    def close(self) -> None:
        stop_loopback(self.server)


def agent(url: str, transport: str = "agui", **extra: Any) -> dict[str, Any]:
    return {
        "id": "desk.one",
        "name": "One",
        "transport": transport,
        "url": url,
        "api_key": "DESK_KEY",
        "key_from": "sync",
        "features": [],
        "identity": "auto",
        **extra,
    }


async def ask(pipe: Any, user: dict[str, Any], **body: Any) -> str:
    chunks = []
    async for chunk in pipe.pipe(
        body={
            "model": "aihub_agent_pipe.desk.one",
            "messages": [{"role": "user", "content": "private words"}],
            "stream": False,
            **body,
        },
        __user__=user,
        __metadata__={},
        __oauth_token__={"access_token": "oauth-secret-token-value"},
    ):
        chunks.append(chunk if isinstance(chunk, str) else "")
    return "".join(chunks)


def probe(pipe: Any, user: dict[str, Any] = ADMIN) -> dict[str, Any]:
    return json.loads(asyncio.run(ask(pipe, user, aihub_probe={"version": 1})))


def test_an_admins_probe_reaches_an_agui_backend_with_its_key_and_nothing_of_the_user() -> None:
    backend = Backend("agui")
    try:
        answer = probe(make_pipe([agent(backend.base + "/agent")], {"DESK_KEY": KEY}))
    finally:
        backend.close()
    assert answer["reached"] is True and answer["protocol"] == "agui" and answer["first_event"] == "RUN_STARTED"
    assert answer["aihub_probe"] == 1 and answer["agent"] == "desk.one" and answer["status"] == 200
    assert answer["host"] == backend.base.removeprefix("http://") and ":" in answer["replica"]
    [request] = backend.requests
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    assert request["body"]["messages"] == [] and request["body"]["forwardedProps"] == {"aihub_probe": True}
    sent = json.dumps(request)
    assert "private words" not in sent and "oauth-secret-token-value" not in sent and "ada@example.com" not in sent
    assert not any(h.lower().startswith(("x-openwebui", "x-aihub")) for h in request["headers"])
    assert "agui_version" not in answer  # a server that names no version is not given one


def test_every_probe_runs_on_a_thread_of_its_own() -> None:
    """A server that keeps threads (LangGraph's checkpointer) must not hand one probe's answer to the next."""
    backend = Backend("agui")
    try:
        pipe = make_pipe([agent(backend.base + "/agent")], {"DESK_KEY": KEY})
        probe(pipe)
        probe(pipe)
    finally:
        backend.close()
    threads = [request["body"]["threadId"] for request in backend.requests]
    assert len(threads) == 2 and threads[0] != threads[1], threads
    assert all(thread.startswith("aihub-probe-") for thread in threads), threads


def test_the_agui_version_is_the_one_run_started_names() -> None:
    backend = Backend("agui-1.0")
    try:
        answer = probe(make_pipe([agent(backend.base + "/agent")], {"DESK_KEY": KEY}))
    finally:
        backend.close()
    assert answer["reached"] is True and answer["agui_version"] == "1.0"


def test_a_non_admins_marker_is_ignored_and_the_chat_runs_as_any_chat() -> None:
    backend = Backend("agui")
    try:
        text = asyncio.run(
            ask(
                make_pipe([agent(backend.base + "/agent")], {"DESK_KEY": KEY}),
                {"id": "u-1", "role": "user"},
                aihub_probe={"version": 1},
            )
        )
    finally:
        backend.close()
    assert "aihub_probe" not in text
    [request] = backend.requests
    assert (
        "private words" in json.dumps(request["body"]["messages"])
        and "aihub_probe" not in request["body"]["forwardedProps"]
    )


def test_a_refused_key_is_reported_masked() -> None:
    backend = Backend("401")
    try:
        answer = probe(make_pipe([agent(backend.base + "/agent")], {"DESK_KEY": KEY}))
    finally:
        backend.close()
    assert answer["reached"] is False and answer["status"] == 401
    assert answer["reason"].startswith("answered HTTP 401: the backend refused the key")
    assert KEY not in json.dumps(answer)


def test_nothing_listening_is_connection_refused() -> None:
    answer = probe(make_pipe([agent(f"http://127.0.0.1:{closed_port()}/agent")], {"DESK_KEY": KEY}))
    assert answer["reached"] is False and answer["reason"] == "connection refused: nothing listens there"


def test_an_answer_that_is_not_agui_or_openai_says_so() -> None:
    backend = Backend("json")
    try:
        agui = probe(make_pipe([agent(backend.base + "/agent")], {"DESK_KEY": KEY}))
        openai = probe(make_pipe([agent(backend.base + "/v1", "openai", model="m")], {"DESK_KEY": KEY}))
    finally:
        backend.close()
    assert agui["reached"] is False
    assert agui["reason"] == "answered, but not as an AG-UI endpoint (application/json, not an AG-UI event stream)"
    assert openai["reached"] is False and openai["status"] == 200
    assert openai["reason"] == "answered, but not as an OpenAI-compatible API (JSON at /models without a model list)"


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("html", "answered, but not as an AG-UI endpoint (text/html, not an AG-UI event stream)"),
        ("openai-stream", "answered, but not as an AG-UI endpoint (no AG-UI event in a text/event-stream)"),
    ],
)
def test_the_reason_names_what_came_instead_of_ag_ui_events(mode: str, reason: str) -> None:
    """A web app's page (a backend.url at the wrong server) is named as the page it is, not as an
    event stream without AG-UI events, which only a stream of other events is."""
    backend = Backend(mode)
    try:
        answer = probe(make_pipe([agent(backend.base + "/agent")], {"DESK_KEY": KEY}))
    finally:
        backend.close()
    assert answer["reached"] is False and answer["reason"] == reason, answer


def test_a_web_page_where_an_openai_api_should_be_is_named() -> None:
    backend = Backend("html")
    try:
        answer = probe(make_pipe([agent(backend.base + "/v1", "openai", model="m")], {"DESK_KEY": KEY}))
    finally:
        backend.close()
    assert answer["reached"] is False
    assert (
        answer["reason"]
        == "answered, but not as an OpenAI-compatible API (text/html at /models, not a JSON model list)"
    )


def test_a_model_list_longer_than_the_probe_reads_is_still_an_openai_api() -> None:
    backend = Backend("openai-many")
    try:
        answer = probe(make_pipe([agent(backend.base + "/v1", "openai", model="m")], {"DESK_KEY": KEY}))
    finally:
        backend.close()
    assert answer["reached"] is True and answer["protocol"] == "openai", answer


def test_an_openai_backend_is_asked_for_its_models_and_runs_nothing() -> None:
    backend = Backend("openai")
    try:
        answer = probe(make_pipe([agent(backend.base + "/v1", "openai", model="m")], {"DESK_KEY": KEY}))
    finally:
        backend.close()
    assert answer["reached"] is True and answer["protocol"] == "openai"
    assert [(r["method"], r["path"]) for r in backend.requests] == [("GET", "/v1/models")]


def test_a_key_the_pipe_does_not_hold_is_the_reason_and_nothing_is_sent() -> None:
    backend = Backend("agui")
    try:
        answer = probe(make_pipe([agent(backend.base + "/agent")], {}))
    finally:
        backend.close()
    assert answer["reached"] is False and "API_KEYS" in answer["reason"] and backend.requests == []
    assert {"forward_user_info", "user_jwt", "identity_key"} <= set(answer)


def test_a_real_agent_framework_server_is_recognised_as_agui(agui_server) -> None:
    """Agent Framework's own AG-UI endpoint (each pinned version), with the probe's empty run."""
    agui_server.clear()
    keyless = {k: v for k, v in agent(agui_server.agent_url).items() if k not in ("api_key", "key_from")}
    answer = probe(make_pipe([keyless]))
    assert answer["reached"] is True and answer["protocol"] == "agui", answer
    assert answer["first_event"] == "RUN_STARTED"


FRAMEWORKS = ("adk", "agno", "crewai", "langgraph", "llamaindex", "pydantic_ai", "strands")


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_every_frameworks_own_agui_server_answers_the_probe_as_agui(framework_servers, name: str) -> None:
    """The probe's run with no messages, against each framework's server in its default setup."""
    from tests.support.frameworks.testing import started

    server = started(framework_servers, name)
    keyless = {k: v for k, v in agent(server.agent_url).items() if k not in ("api_key", "key_from")}
    answer = probe(make_pipe([keyless]))
    assert answer["reached"] is True and answer["protocol"] == "agui", answer
    if name == "strands":  # ag-ui-strands names AG-UI 1.0 on RUN_STARTED (protocolVersion)
        assert answer.get("agui_version") == "1.0", answer


def test_a_backend_that_takes_the_connection_and_never_answers_times_out(monkeypatch) -> None:
    from tests.support.pipe_support import pipe_module

    monkeypatch.setattr(pipe_module, "PROBE_TIMEOUT_SECONDS", 0.5)
    with socket.socket() as silent:  # listening, never accepting: the kernel completes the handshake
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        answer = probe(make_pipe([agent(f"http://127.0.0.1:{silent.getsockname()[1]}/agent")], {"DESK_KEY": KEY}))
    assert answer["reached"] is False and answer["reason"] == "no answer within 0.5 seconds", answer
    assert answer["ms"] < 5000


def test_an_oauth_header_the_servers_forwarding_settings_name_is_reported(monkeypatch) -> None:
    """A chat with the agent would fail ('a header the pipe already sends'): the probe says so."""
    from tests.support.pipe_support import pipe_module

    backend = Backend("agui")
    secure = agent(backend.base + "/agent", oauth_token_header="X-Drive-Token")
    try:
        assert probe(make_pipe([secure], {"DESK_KEY": KEY}))["oauth_header_taken"] is False
        assert "oauth_header_taken" not in probe(make_pipe([agent(backend.base + "/agent")], {"DESK_KEY": KEY}))
        renamed = pipe_module.forward_settings({"FORWARD_USER_INFO_HEADER_USER_ID": "x-drive-token"})
        monkeypatch.setattr(pipe_module, "server_forward_settings", lambda: renamed)
        assert probe(make_pipe([secure], {"DESK_KEY": KEY}))["oauth_header_taken"] is True
    finally:
        backend.close()


def test_an_agent_id_that_shares_characters_with_a_key_still_gets_its_answer() -> None:
    """A chat's error is withheld when it repeats 8 characters of a key; the probe's answer is the
    pipe's own fields, so it is masked, never withheld (doctor would read 'not a probe')."""
    backend = Backend("agui")
    key = "desk.one-" + KEY  # the agent id is a fragment of its key
    try:
        answer = probe(make_pipe([agent(backend.base + "/agent")], {"DESK_KEY": key}))
    finally:
        backend.close()
    assert answer["reached"] is True and answer["agent"] == "desk.one"
    assert backend.requests[0]["headers"]["Authorization"] == f"Bearer {key}"


# The probe's run has no messages and the pipe hangs up at its first event, but some servers run
# their agent on it anyway and call the model with nothing (measured 2026-12-07; with a real LLM a
# call, often refused for its empty input, per agent and doctor run: docs/commands.md says so).
# Whether they do races the hang-up: these servers run the agent inside the response's generator,
# which the hang-up closes, so the model is called only when the run reaches it first (Strands did
# not, once in five full runs). The others never start their model on a run with no messages.
MAY_CALL_ITS_MODEL_ON_THE_PROBE = {"agno", "langgraph", "llamaindex", "strands"}


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_a_probe_gives_no_model_anything_of_a_user_and_some_frameworks_none_at_all(
    framework_servers, name: str
) -> None:
    """ADK, CrewAI and Pydantic AI never call their model on a probe; the others
    may (see above), and whatever they call it with carries nothing of a user."""
    import time

    from tests.support.frameworks.testing import started

    server = started(framework_servers, name)
    keyless = {k: v for k, v in agent(server.agent_url).items() if k not in ("api_key", "key_from")}
    assert probe(make_pipe([keyless]))["reached"] is True
    deadline = time.monotonic() + 5
    while not server.model_calls() and time.monotonic() < deadline:
        time.sleep(0.1)
    calls = server.model_calls()
    if name not in MAY_CALL_ITS_MODEL_ON_THE_PROBE:
        assert not calls, calls
    assert all(not m["text"] for call in calls for m in call)  # never anything of a user: there is none
