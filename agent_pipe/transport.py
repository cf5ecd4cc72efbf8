"""The pooled client, the proxy, the status line, batching and the run of one request."""

import asyncio
import functools
import os
import ssl
import sys
import threading
import types
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from agent_pipe.constants import (
    FINISH_GRACE_SECONDS,
    KEEPALIVE_SECONDS,
    MAX_CONNECTIONS,
    MAX_EVENT_MB,
    MB,
    STEP_DELAY_SECONDS,
    AgentHTTPError,
)
from agent_pipe.file_store import RequestBody
from agent_pipe.helpers import EventEmitter, log
from agent_pipe.recorder import Recorder
from agent_pipe.valves import AgentSpec
from agent_pipe.wire import AgentStream

# === transport: the pool, the proxy, the status line, batching, the run ===========================


# --- connections: one pooled client per process (and event loop) ------------------------------
# A new client per chat turn costs a connection (and a TLS handshake) every turn, and an SSL
# context (~20 ms of CPU) for each. The client is aiohttp's, as for Open WebUI's own OpenAI
# connections: per network read it costs Open WebUI about half the CPU httpx does, and at 50
# chats at a time Open WebUI's CPU is the chat's latency. The pool lives in a holder registered
# in sys.modules, so a reload of this file (Open WebUI re-executes it when the function changes)
# reuses the same connections instead of orphaning them. One client per event loop: a client's
# connections belong to the loop that opened them (tests run several loops; Open WebUI one).

_POOL_HOLDER = "aihub_agent_pipe__connection_pool"
_POOL_VERSION = 2  # bump when the client's configuration changes: a reload then builds a new one


@functools.lru_cache(maxsize=8)
def _deadline(timeout: float) -> aiohttp.ClientTimeout:
    """The run's deadline, enforced by aiohttp itself: one timer per request, not one per read."""
    return aiohttp.ClientTimeout(total=timeout, sock_connect=timeout)


def _pool() -> Any:
    """The process-wide holder: ``clients`` by event loop, the SSL context, a lock for building it."""
    holder: Any = sys.modules.get(_POOL_HOLDER)  # a module, with the attributes set here
    if holder is None:
        holder = types.ModuleType(_POOL_HOLDER, "aihub_agent_pipe's shared HTTP clients (survives reloads)")
        holder.clients = {}  # loop -> (version, aiohttp.ClientSession)
        holder.ssl_context = None
        holder.ssl_lock = threading.Lock()
        holder = sys.modules.setdefault(_POOL_HOLDER, holder)
    return holder


def _ssl_context() -> ssl.SSLContext:
    """Built once per process (blocking: it reads the CA store); call it off the event loop.

    The system's CA store (and SSL_CERT_FILE), as Open WebUI's own connections use.
    """
    pool = _pool()
    with pool.ssl_lock:
        if pool.ssl_context is None:
            pool.ssl_context = ssl.create_default_context()
        return pool.ssl_context


async def shared_client() -> aiohttp.ClientSession:
    """This event loop's client, created on first use; the SSL context is built in a thread."""
    loop = asyncio.get_running_loop()
    pool = _pool()
    entry = pool.clients.get(loop)
    if entry is not None and entry[0] == _POOL_VERSION and not entry[1].closed:
        return entry[1]
    ssl_context = pool.ssl_context or await asyncio.to_thread(_ssl_context)
    entry = pool.clients.get(loop)  # another chat may have created it while this one waited
    if entry is not None and entry[0] == _POOL_VERSION and not entry[1].closed:
        return entry[1]
    for other in [other for other in pool.clients if other.is_closed()]:
        del pool.clients[other]  # a closed loop's connections can never be used again
    # A client of an older version of this file is dropped, not closed: chats still streaming on
    # it keep it alive until they end.
    client = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(
            limit=MAX_CONNECTIONS, limit_per_host=0, keepalive_timeout=KEEPALIVE_SECONDS, ssl=ssl_context
        ),
        # shared by every user's chats: a cookie one agent response sets must never ride along
        # on another user's request
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=False,  # with it, aiohttp looks up proxies and .netrc in a thread on every request; see _proxy_for
        # every request passes its own (stream_run: the TIMEOUT_SECONDS valve); this is the fallback
        timeout=aiohttp.ClientTimeout(total=300, sock_connect=300),
    )
    pool.clients[loop] = (_POOL_VERSION, client)
    return client


# --- the proxy ------------------------------------------------------------------------------------


# The variables that can give a URL of each scheme a proxy, and those that can take it away again.
# REQUEST_METHOD: urllib ignores HTTP_PROXY when it is set (a CGI environment, where it is untrusted).
_PROXY_VARIABLES = {"http": ("http_proxy", "HTTP_PROXY"), "https": ("https_proxy", "HTTPS_PROXY")}
_NO_PROXY_VARIABLES = ("no_proxy", "NO_PROXY", "REQUEST_METHOD")


def _proxy_for(url: str) -> str | None:
    """The HTTP(S)_PROXY for ``url`` unless NO_PROXY exempts it: environment reads only, no thread.

    Read on every chat, so a change counts, but only what can matter: with no proxy for the URL's
    scheme (the usual case) that is two reads. A read of an unset variable raises and catches
    two KeyErrors inside ``os.environ``; seven of them cost the first token 0.045 ms
    (``bench/pipe_versions.py``). urllib's answer is cached by the values it depends on.
    """
    proxies = tuple(map(os.environ.get, _PROXY_VARIABLES.get(url.partition(":")[0].lower(), ())))
    if not any(proxies):
        return None
    return _proxy_lookup(url, proxies + tuple(map(os.environ.get, _NO_PROXY_VARIABLES)))


@functools.lru_cache(maxsize=64)
def _proxy_lookup(url: str, environment: tuple[str | None, ...]) -> str | None:
    parts = urllib.parse.urlsplit(url)
    # proxy_bypass_environment: CPython's no_proxy rule, which typeshed does not list
    if urllib.request.proxy_bypass_environment(parts.hostname or ""):  # type: ignore[attr-defined]
        return None
    return urllib.request.getproxies_environment().get(parts.scheme)


# --- the status line ------------------------------------------------------------------------------


class StatusLine:
    """The chat's status line (Open WebUI's event emitter), updates kept in order.

    In a browser chat every status is two socket messages and a rewrite of the whole chat in
    Open WebUI's database, and Open WebUI's own connections send none. So "Asking <agent>…" is
    sent only when the agent has shown nothing within ``ASKING_DELAY_SECONDS`` (a timer, not a
    wait: the request goes out at once); an agent that answers sooner is its own progress sign.
    """

    def __init__(self, emitter: EventEmitter) -> None:
        self._emitter = emitter
        self._timer: asyncio.TimerHandle | None = None
        self._sending: asyncio.Future[None] | None = None  # a delayed update on its way

    def later(self, update: dict[str, Any], delay: float) -> None:
        if self._emitter is not None:
            self._timer = asyncio.get_running_loop().call_later(delay, self._fire, update)

    def _fire(self, update: dict[str, Any]) -> None:
        self._timer = None
        self._sending = asyncio.ensure_future(_emit(self._emitter, update))

    def shown(self) -> None:
        """Something showed up in the chat (or it ended): a delayed update not sent yet is not needed."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def send(self, update: dict[str, Any]) -> None:
        if update.pop("step", False):
            # an agent's step shows only when nothing else did within the delay: a step that
            # text, a tool or the next step follows at once needs no status (see Outbound)
            self.shown()
            self.later(update, STEP_DELAY_SECONDS)
            return
        self.shown()
        if self._sending is not None:
            await self._sending  # the delayed update first, so this one is the last word
            self._sending = None
        await _emit(self._emitter, update)


async def _emit_event(emitter: EventEmitter, event: dict[str, Any]) -> None:
    if emitter is None:
        return
    try:
        await emitter(event)
    except Exception:  # what the agent shows beside its answer must never break the answer
        log.debug("aihub_agent_pipe: event emitter failed", exc_info=True)


async def _emit(emitter: EventEmitter, status: dict[str, Any]) -> None:
    if emitter is None:
        return
    try:
        await emitter({"type": "status", "data": status})
    except Exception:  # a status is decoration; never let it break the answer
        log.debug("aihub_agent_pipe: event emitter failed", exc_info=True)


# --- batching -------------------------------------------------------------------------------------


class Batch:
    """Text on its way to Open WebUI, sent as few chunks as a reader cannot tell from a stream.

    Open WebUI spends more CPU on each chunk a pipe yields (it wraps it in an OpenAI chunk of its
    own, and a browser chat emits it over the socket) than the pipe spends on an event, and at
    many chats at a time its CPU is every chat's latency. So text that arrives within ``interval``
    seconds of the last chunk sent waits and goes out with the first read after that (``due``);
    when the agent pauses and no read comes, ``stream_run`` wakes for it at ``wake_at``, one
    interval later (a wake of its own costs more than the chunk: it is kept for pauses). The first
    text goes out at once; nothing waits longer than twice the interval.
    """

    def __init__(self, interval: float) -> None:
        self.interval = max(0.0, interval)
        self._parts: list[str] = []
        self._sent_at = -float("inf")  # loop time of the last chunk out

    @property
    def due(self) -> float:
        """When the held text must go out (loop time); meaningful only while some is held."""
        return self._sent_at + self.interval

    @property
    def wake_at(self) -> float:
        """When held text goes out although no read came (the agent paused)."""
        return self._sent_at + 2 * self.interval

    @property
    def holding(self) -> bool:
        return bool(self._parts)

    def add(self, text: str) -> None:
        if text:
            self._parts.append(text)

    def ready(self, now: float) -> bool:
        return bool(self._parts) and now >= self.due

    def take(self, now: float | None = None) -> str:
        text = "".join(self._parts)
        self._parts = []
        if text and now is not None:
            self._sent_at = now
        return text


def _safe_chunks(chunk: str) -> list[str]:
    """Open WebUI passes a yielded line that starts with "data:" through as raw SSE; split it."""
    if not chunk:
        return []
    if chunk.startswith("data:"):
        return [chunk[:1], chunk[1:]]
    return [chunk]


# --- the run --------------------------------------------------------------------------------------


async def stream_run(
    client: aiohttp.ClientSession,
    agent: AgentSpec,
    headers: dict[str, str],
    payload: "dict[str, Any] | RequestBody",
    recorder: Recorder,
    batch: Batch,
    status: StatusLine,
    timeout: float,
    max_event: int = MAX_EVENT_MB * MB,
) -> AsyncIterator[str]:
    """Send the run to the agent, feed its events to the recorder, yield what became stable.

    One deadline for the whole run (``timeout`` seconds), kept by aiohttp. Reads are
    ``readany()``, which a timeout can interrupt and the next call resume, so while the batch
    holds text the reads also wake when that text must go out. Once the run has finished and
    everything is out, the end of the body (which follows at once) is still read, briefly: only a
    response read to its end returns its connection to the pool. What the batch still holds when
    this raises is the caller's to send.
    """
    url = agent.url.rstrip("/") + "/chat/completions" if agent.transport == "openai" else agent.url
    if isinstance(payload, RequestBody):  # encode_body's, with files: sent piece by piece, its size known
        body: dict[str, Any] = {"data": payload.stream(), "headers": {**headers, "Content-Length": str(payload.size)}}
    else:
        body = {"json": payload, "headers": headers}
    request = client.post(url, **body, timeout=_deadline(timeout), proxy=_proxy_for(url))
    async with request as response:
        if response.status >= 400:
            # read enough to mask a key the body echoes before the text is cut short (failure_text)
            detail = b""
            while len(detail) < 8192 and (more := await response.content.read(8192 - len(detail))):
                detail += more
            raise AgentHTTPError(response.status, detail.decode("utf-8", "replace"))
        stream, content, loop = AgentStream(agent.transport, max_event), response.content, asyncio.get_running_loop()
        try:
            while not recorder.finished:
                if batch.holding:
                    # Held text goes out with the first read after it is due, or at wake_at when the
                    # agent pauses: one timer for the whole wait, not one per read, and nothing is
                    # yielded or emitted inside it (a timeout must only ever interrupt the read).
                    waiting, ended = asyncio.timeout_at(batch.wake_at), False
                    try:
                        async with waiting:
                            while not (ended or recorder.finished or batch.ready(loop.time())):
                                raw = await content.readany()
                                ended = not raw
                                for event in stream.feed(raw) if raw else stream.end():
                                    recorder.feed(event)
                                batch.add(recorder.drain())
                    except TimeoutError:
                        if not waiting.expired():
                            raise  # the run's deadline (aiohttp's)
                    for update in recorder.take_statuses():
                        await status.send(update)
                    for chunk in _safe_chunks(batch.take(loop.time())):
                        yield chunk
                    if ended:
                        return
                    continue
                # Nothing held: the first text of this read goes out before the rest of it is parsed.
                raw = await content.readany()
                for event in stream.feed(raw) if raw else stream.end():
                    recorder.feed(event)
                    if recorder.statuses:
                        for update in recorder.take_statuses():
                            await status.send(update)
                    if text := recorder.drain():
                        batch.add(text)  # after the first, the rest of this read waits for the interval
                        if batch.ready(now := loop.time()):
                            for chunk in _safe_chunks(batch.take(now)):
                                yield chunk
                if not raw:
                    break
        finally:  # what the run said of its framework, for answering its client calls (questions.py)
            recorder.outbound.framework = stream.raw_source or recorder.outbound.framework
        for update in recorder.take_statuses():
            await status.send(update)
        for chunk in _safe_chunks(batch.take(loop.time())):
            yield chunk  # the end of a run is never held
        if recorder.finished:
            # The body's end follows the run's end at once: read it, briefly, so the connection
            # goes back to the pool; a server that keeps the body open loses its connection.
            waiting = asyncio.timeout_at(loop.time() + FINISH_GRACE_SECONDS)
            try:
                async with waiting:
                    while await content.readany():
                        pass
            except TimeoutError:
                if not waiting.expired():
                    raise
