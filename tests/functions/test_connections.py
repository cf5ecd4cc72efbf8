"""The pipe's connections: one pooled client per process and event loop, reused by every chat,
surviving a reload of the function file; the SSL context built once, off the event loop; a
cancelled chat closing its agent request at once; enough connections for many chats at a time;
no cookie carried from one chat to the next; one network read handed on in at most two chunks.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import aiohttp
import pytest

from demo_agents.sse_handler import SSEHandler
from tests.support.loading import load_file
from tests.support.pipe_support import FINISHED, PIPE_FILE, T, drive, events, make_pipe, pipe_module
from tests.support.slow_agent import SlowAgent

HOLDER = pipe_module._POOL_HOLDER
TURN = events(T("Hi"), FINISHED)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many chats connect at once


class AgentServer:
    """A loopback AG-UI agent that records each request's client address and cookie.

    ``barrier`` holds every answer until that many requests are in (concurrent chats).
    """

    def __init__(self, *, barrier: int = 0) -> None:
        self.peers: list[tuple[str, int]] = []
        self.cookies: list[str | None] = []
        self._barrier = threading.Barrier(barrier, timeout=15) if barrier else None
        server = self

        class Handler(SSEHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's method name)
                self.read_body()
                server.peers.append(self.client_address)
                server.cookies.append(self.headers.get("Cookie"))
                if server._barrier is not None:
                    server._barrier.wait()
                self.start_stream(("Set-Cookie", f"session=user-{len(server.peers)}; Path=/"))
                for event in TURN:
                    self.send_event(event)
                self.end_stream()

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/agent"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(autouse=True)
def fresh_pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with no shared client, as a fresh Open WebUI process would."""
    monkeypatch.delitem(pipe_module.sys.modules, HOLDER, raising=False)
    yield


def agent_pipe(url: str, timeout: float = 30) -> Any:
    return make_pipe([{"id": "bp.agent", "name": "Agent", "transport": "agui", "url": url}], timeout=timeout)


def test_chats_in_a_row_reuse_one_connection() -> None:
    server = AgentServer()
    try:
        pipe = agent_pipe(server.url)

        async def three_chats() -> list[str]:
            return [(await drive(pipe, "bp.agent", [{"role": "user", "content": "hi"}])).content for _ in range(3)]

        assert asyncio.run(three_chats()) == ["Hi"] * 3
        assert len(server.peers) == 3 and len(set(server.peers)) == 1, server.peers
    finally:
        server.close()


def test_a_reloaded_function_file_reuses_the_same_client() -> None:
    async def clients() -> tuple[aiohttp.ClientSession, aiohttp.ClientSession]:
        first = await pipe_module.shared_client()
        reloaded = load_file(PIPE_FILE, "function_aihub_agent_pipe_reloaded")  # Open WebUI re-execs the file
        return first, await reloaded.shared_client()

    first, second = asyncio.run(clients())
    assert first is second


def test_each_event_loop_gets_its_own_client_and_closed_loops_are_forgotten() -> None:
    first = asyncio.run(pipe_module.shared_client())
    second = asyncio.run(pipe_module.shared_client())
    assert first is not second
    assert len(pipe_module.sys.modules[HOLDER].clients) == 1  # the first loop is closed, so its entry went


def test_ssl_context_is_built_once_and_never_on_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    built_on: list[str] = []
    real = pipe_module.ssl.create_default_context

    def recording(*args: Any, **kwargs: Any) -> Any:
        built_on.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(pipe_module.ssl, "create_default_context", recording)
    server = AgentServer()
    try:
        pipe = agent_pipe(server.url)

        async def chats() -> list[str]:
            # the first chats of a process arrive together; then more chats, on another loop too
            runs = await asyncio.gather(
                *(drive(pipe, "bp.agent", [{"role": "user", "content": "hi"}]) for _ in range(5))
            )
            return [run.content for run in runs]

        assert asyncio.run(chats()) == ["Hi"] * 5
        assert asyncio.run(chats()) == ["Hi"] * 5
    finally:
        server.close()
    assert len(built_on) == 1 and built_on[0] != threading.main_thread().name, built_on


def test_a_cancelled_chat_closes_the_agent_request_at_once() -> None:
    server = SlowAgent()
    try:
        pipe = agent_pipe(server.url)

        async def cancel_after_first_text() -> float:
            chat = asyncio.create_task(drive(pipe, "bp.agent", [{"role": "user", "content": "hi"}]))
            while not server.started.is_set():
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)  # the chat is streaming
            cancelled_at = time.monotonic()
            chat.cancel()
            with pytest.raises(asyncio.CancelledError):
                await chat
            # still on the same loop, so the pooled client is still alive: nothing keeps the socket open
            await asyncio.sleep(0)
            return cancelled_at

        cancelled_at = asyncio.run(cancel_after_first_text())
        assert server.disconnected.wait(2), "the agent never saw the request end"
        assert server.disconnected_at - cancelled_at < 0.5
        assert server.deltas < 30  # it stopped streaming long before its 10 s were up
    finally:
        server.close()


def test_a_hundred_and_fifty_chats_at_once_each_get_a_connection() -> None:
    """aiohttp's default pool (100 connections) would make the last 50 wait for a free one: here
    the agent answers none until all 150 are in, so a pool that small would time out."""
    chats = 150
    server = AgentServer(barrier=chats)
    try:
        pipe = agent_pipe(server.url, timeout=20)

        async def all_at_once() -> list[str]:
            runs = await asyncio.gather(
                *(drive(pipe, "bp.agent", [{"role": "user", "content": "hi"}]) for _ in range(chats))
            )
            return [run.content for run in runs]

        assert asyncio.run(all_at_once()) == ["Hi"] * chats
    finally:
        server.close()


def test_a_cookie_an_agent_sets_is_never_sent_with_the_next_chat() -> None:
    """The client is shared by every user: a session cookie from user A's answer must not go out
    with user B's request. The agent is reached by host name: aiohttp's ordinary cookie jar keeps
    no cookies from an IP address, so 127.0.0.1 would pass without the pipe's protection."""
    server = AgentServer()
    try:
        by_name = server.url.replace("127.0.0.1", "localhost")

        async def plain_client_keeps_it() -> None:  # the set-up can fail: a normal jar sends it back
            async with aiohttp.ClientSession() as plain:
                for _ in range(2):
                    async with plain.post(by_name, json={}) as response:
                        await response.read()

        asyncio.run(plain_client_keeps_it())
        assert server.cookies[1] == "session=user-1", server.cookies
        server.cookies.clear()
        pipe = agent_pipe(by_name)

        async def two_users() -> None:
            await drive(pipe, "bp.agent", [{"role": "user", "content": "hi"}], user_id="alice")
            await drive(pipe, "bp.agent", [{"role": "user", "content": "hi"}], user_id="bob")

        asyncio.run(two_users())
        assert server.cookies == [None, None], server.cookies
    finally:
        server.close()


def test_one_network_read_reaches_open_webui_as_at_most_two_chunks(sse_stub: Any) -> None:
    """Open WebUI wraps every yielded chunk in a JSON chunk of its own: the first text of a read
    goes out at once, the rest of the read as one chunk."""
    turn = events(*(T(f"w{i} ") for i in range(50)), FINISHED)
    sse_stub.behaviour.raw = "".join(f"data: {json.dumps(e)}\n\n" for e in turn).encode()  # one write
    pipe = make_pipe([{"id": "bp.agent", "name": "Agent", "transport": "agui", "url": sse_stub.url}])
    run = asyncio.run(drive(pipe, "bp.agent", [{"role": "user", "content": "hi"}]))
    assert run.content == "".join(f"w{i} " for i in range(50))
    assert run.chunks[0] == "w0 " and len([c for c in run.chunks if c]) <= 2, run.chunks


def test_after_the_first_chat_nothing_is_handed_to_a_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread hop per chat (aiohttp's own proxy and .netrc look-ups with trust_env) costs the
    first token a scheduling delay on a busy server; the first chat makes one (the SSL context)."""
    hops: list[str] = []
    real = asyncio.BaseEventLoop.run_in_executor

    def counting(self: Any, executor: Any, func: Any, *args: Any) -> Any:
        hops.append(getattr(func, "__name__", repr(func)))
        return real(self, executor, func, *args)

    monkeypatch.setattr(asyncio.BaseEventLoop, "run_in_executor", counting)
    server = AgentServer()
    try:
        pipe = agent_pipe(server.url)

        async def chats() -> list[int]:
            seen = []
            for _ in range(3):
                await drive(pipe, "bp.agent", [{"role": "user", "content": "hi"}])
                seen.append(len(hops))
            return seen

        assert asyncio.run(chats()) == [1, 1, 1], hops
    finally:
        server.close()


PROXY_ENVIRONMENT = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "ALL_PROXY",
    "REQUEST_METHOD",
)


@pytest.mark.parametrize(
    ("env", "url", "proxy"),
    [
        ({}, "https://agents.internal/x", None),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "https://agents.internal/x", "http://proxy:3128"),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "http://agents.internal/x", None),
        ({"HTTP_PROXY": "http://proxy:3128", "NO_PROXY": "agents.internal"}, "http://agents.internal/x", None),
        (
            {"HTTP_PROXY": "http://proxy:3128", "NO_PROXY": "other.internal"},
            "http://agents.internal/x",
            "http://proxy:3128",
        ),
        (
            {"http_proxy": "http://lower:3128", "HTTP_PROXY": "http://upper:3128"},
            "http://a.internal/x",
            "http://lower:3128",
        ),
        ({"HTTP_PROXY": "http://proxy:3128", "REQUEST_METHOD": "GET"}, "http://a.internal/x", None),
        ({"HTTPS_PROXY": "http://proxy:3128", "REQUEST_METHOD": "GET"}, "https://a.internal/x", "http://proxy:3128"),
        ({"HTTPS_PROXY": "http://proxy:3128", "no_proxy": "*"}, "https://a.internal/x", None),
        ({"HTTPS_PROXY": "http://proxy:3128"}, "HTTPS://a.internal/x", "http://proxy:3128"),
    ],
)
def test_proxies_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], url: str, proxy: str | None
) -> None:
    """The pipe reads only the variables that can matter for the URL; the answer is urllib's."""
    for name in PROXY_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert pipe_module._proxy_for(url) == proxy


def test_a_changed_proxy_counts_at_the_next_chat(monkeypatch: pytest.MonkeyPatch) -> None:
    """The look-up is cached by every value that decides it, so a change is never missed."""
    for name in PROXY_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    url = "http://agents.internal/x"
    assert pipe_module._proxy_for(url) is None
    monkeypatch.setenv("HTTP_PROXY", "http://first:3128")
    assert pipe_module._proxy_for(url) == "http://first:3128"
    monkeypatch.setenv("HTTP_PROXY", "http://second:3128")
    assert pipe_module._proxy_for(url) == "http://second:3128"
    monkeypatch.setenv("REQUEST_METHOD", "GET")
    assert pipe_module._proxy_for(url) is None
    monkeypatch.delenv("REQUEST_METHOD")
    monkeypatch.setenv("no_proxy", "agents.internal")
    assert pipe_module._proxy_for(url) is None
