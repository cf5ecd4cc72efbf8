#!/usr/bin/env python3
"""Benchmark: chatting through a real Open WebUI, the agent pipe against Open WebUI's own connection.

Usage (from the repository root)::

    .venv/bin/python bench/owui_chat.py                       # 1, 10, 50 chats at a time; 1,000 in a row
    .venv/bin/python bench/owui_chat.py --concurrency 1 10 --rounds 5 --in-a-row 0   # quicker
    .venv/bin/python bench/owui_chat.py --via browser         # as Open WebUI's page chats (needs .[bench])

One throwaway Open WebUI (scripts/openwebui-local) and one scripted backend process
(bench/scripted_backend.py: a lead-in, a tool call, a summary, ``--rate`` tokens per
second) serve five ways to the same turn, all through Open WebUI's streaming chat endpoint
(``POST /api/chat/completions``, ``stream: true``):

    (a) openai-connection  Open WebUI's own OpenAI connection to the backend's /v1 (what a
                           platform team would use instead of the pipe)
    (b) pipe-openai        the agent pipe, OpenAI transport, to the same /v1
    (c) pipe-agui          the agent pipe, AG-UI transport, to the backend's /agui
    (d) pipe-floor         a pipe with no agent behind it (bench/fixtures/paced_pipe.py) that
                           yields the same turn at the same rate: what Open WebUI costs for any
                           pipe function, without a request to an agent
    (e) pipe-minimal       the least a pipe can do to relay the agent (bench/fixtures/minimal_pipe.py):
                           the same request to /v1, each text delta yielded as it is parsed, nothing
                           else; (b) next to (e) is the agent pipe's own cost with the request in it

For each concurrency, ``--rounds`` rounds (more at low concurrency, so each way gets at least
``--min-chats`` chats); in each round every way runs one wave of that many
chats at once, the order of the ways rotating from round to round (interleaved, so load drift
hits all ways alike). Per chat: time to first token (the first text of the answer) and to last
token (the last text), as the client sees them. Per way: medians, p90, the ratios of (b)-(e)
to (a) with a 95% bootstrap interval (how far the ratio could move on other chats), and the
Open WebUI process's CPU time per chat (utime+stime over the waves of that way). At one chat at a
time, also where each first token of the ways with an agent spent its time, from the backend's
timeline (all three processes read the same monotonic clock): until the agent had the request
(Open WebUI's dispatch, and for a pipe its set-up), the agent's own time to its first token, and
from that token written until the client had it as text; and (b)'s and (c)'s first token minus
(e)'s in the same round (paired, so the machine's drift cancels), with a 95% interval.

Then ``--in-a-row`` chats one after another on each of (a), (b) and (c): the Open WebUI process's RSS, its open
socket fds and its connections to the backend, sampled every tenth of the run.

``--via api`` (the default) reads each answer from the streaming response, as an API client does.
``--via browser`` chats as Open WebUI's own page does: a new chat (``parent_id: null``, a message
id, the ``session_id`` of a socket.io connection signed in as the admin), answered at once with
its task ids, the answer arriving as socket events; first and last token are the first and last
text event of that message. Open WebUI then runs the chat as a background task that also writes
the chat to its database. The turn is text only there (the backend's ``--no-tool-call``): in a
browser chat Open WebUI's own connection takes the agent's streamed tool call for one it must run,
and calls the agent again and again (257 requests for one chat with the tool-call turn). The
page's title, tags and follow-up tasks are not asked for. Needs python-socketio: ``pip install
-e '.[bench]'``.

``--think-ms`` makes the agent wait before its first token, as an LLM does before it answers (the
backend and the paced pipe alike; not in the chats in a row). By default it answers after one
token's time (5 ms), which puts everything Open WebUI adds in front of an agent in full view.

``--identity`` runs it all as issue 19's chats are: Open WebUI forwards the user (its
``ENABLE_FORWARD_USER_INFO_HEADERS`` with a JWT secret, so (a) carries its HS256 JWT too), the
pipe has an identity signing key, and the admin who chats is in two groups. Each pipe chat then
also reads the user's groups from Open WebUI's database and mints two tokens. A sixth way,
(f) pipe-agui-anon, is (c) for an agent with ``identity: none``: (c) next to (f) is what the
identity costs a chat.

``--topology ha`` runs it all on scripts/openwebui-local's production topology (PostgreSQL, Redis
for the socket, two replicas): every chat goes to the first replica, whose process is the one
measured.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import functools
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PIPE_FILE = REPO / "owui_functions" / "aihub_agent_pipe.py"
PACED_PIPE_FILE = REPO / "bench" / "fixtures" / "paced_pipe.py"
MINIMAL_PIPE_FILE = REPO / "bench" / "fixtures" / "minimal_pipe.py"
BACKEND = REPO / "bench" / "scripted_backend.py"
WAYS = {
    "openai-connection": "bench-agent",
    "pipe-openai": "aihub_agent_pipe.bench.openai",
    "pipe-agui": "aihub_agent_pipe.bench.agui",
    "pipe-floor": "bench_paced_pipe.floor",
    "pipe-minimal": "bench_minimal_pipe.minimal",
}
IDENTITY_WAY = ("pipe-agui-anon", "aihub_agent_pipe.bench.agui_anon")  # with --identity only
ROW_WAYS = ("openai-connection", "pipe-openai", "pipe-agui")  # the ways of the 1,000 chats in a row
# A chat's first token, one chat at a time, in three parts on the machine's monotonic clock: the
# client's request until the backend has the agent's request; the agent's own time to its first
# token (the same script for every way); that token written until the client has it as text.
PHASES = ("to_the_agent", "agent", "back_to_the_client")
BASELINE = "openai-connection"
RELAY = "pipe-minimal"  # the least a pipe can do with the same agent
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# (first token s, last token s, text, chunks with text, start on time.perf_counter's clock) of one chat
Answer = tuple[float, float, str, int, float]
Ask = Callable[[str], Awaitable[Answer]]  # one chat with a model, as the client sees it


@dataclass(frozen=True)
class Turn:
    """What the scripted backend (and the paced pipe) stream per chat."""

    tokens: int  # text tokens before and after the tool call
    tool_call: bool = True
    think_ms: float = 0  # the agent's wait before its first token (an LLM's time to first token)


# ------------------------------------------------------------------------------ the set-up


def start_backend(rate: float, turn: Turn) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            str(BACKEND),
            "--rate",
            str(rate),
            "--tokens",
            str(turn.tokens),
            "--think-ms",
            str(turn.think_ms),
        ]
        + ([] if turn.tool_call else ["--no-tool-call"]),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise SystemExit(f"the scripted backend did not start: {line!r}")
    return proc, f"http://127.0.0.1:{line.split()[1]}"


def install_pipe(http: httpx.Client, function_id: str, name: str, path: Path, valves: dict[str, Any]) -> None:
    """Create and activate the pipe function (once per instance) and set its valves."""
    if http.get(f"/api/v1/functions/id/{function_id}").status_code != 200:
        form = {
            "id": function_id,
            "name": name,
            "content": path.read_text(encoding="utf-8"),
            "meta": {"description": "bench"},
        }
        http.post("/api/v1/functions/create", json=form).raise_for_status()
        http.post(f"/api/v1/functions/id/{function_id}/toggle").raise_for_status()
    http.post(f"/api/v1/functions/id/{function_id}/valves/update", json=valves).raise_for_status()


def configure(http: httpx.Client, backend: str, rate: float, turn: Turn) -> None:
    """Point Open WebUI's OpenAI connection at the backend; install the pipe with two agents on it,
    the paced pipe (the floor) at the backend's rate, and the minimal relay pipe on the backend's /v1."""
    http.post(
        "/openai/config/update",
        json={
            "ENABLE_OPENAI_API": True,
            "OPENAI_API_BASE_URLS": [f"{backend}/v1"],
            "OPENAI_API_KEYS": ["bench-key"],
            "OPENAI_API_CONFIGS": {"0": {"enable": True}},
        },
    ).raise_for_status()
    agents = [
        {
            "id": "bench.openai",
            "name": "Bench (OpenAI)",
            "transport": "openai",
            "url": f"{backend}/v1",
            "model": "bench-agent",
            "features": [],
        },
        {"id": "bench.agui", "name": "Bench (AG-UI)", "transport": "agui", "url": f"{backend}/agui", "features": []},
        {
            "id": "bench.agui_anon",
            "name": "Bench (AG-UI, no identity)",
            "transport": "agui",
            "url": f"{backend}/agui",
            "features": [],
            "identity": "none",
        },
    ]
    install_pipe(
        http,
        "aihub_agent_pipe",
        "AI Hub Agent Pipe",
        PIPE_FILE,
        {"AGENTS": json.dumps(agents), "API_KEYS": "{}", "TIMEOUT_SECONDS": 300},
    )
    install_pipe(
        http,
        "bench_paced_pipe",
        "Bench paced pipe",
        PACED_PIPE_FILE,
        {"RATE": rate, "TOKENS": turn.tokens, "TOOL_CALL": turn.tool_call, "THINK_MS": turn.think_ms},
    )
    install_pipe(
        http,
        "bench_minimal_pipe",
        "Bench minimal relay pipe",
        MINIMAL_PIPE_FILE,
        {"URL": f"{backend}/v1", "MODEL": "bench-agent"},
    )
    listed = {m["id"] for m in http.get("/api/models", params={"refresh": "true"}).raise_for_status().json()["data"]}
    if IDENTITY_WAY[0] in WAYS:  # --identity: the admin who chats is in two groups, as a platform's users are
        users = http.get("/api/v1/users/").raise_for_status().json()
        me = next(u["id"] for u in users.get("users", users) if u["role"] == "admin")  # the one who chats
        for name in ("Bench Finance", "Bench Analysts"):
            group = http.post("/api/v1/groups/create", json={"name": name, "description": "bench"})
            group_id = group.raise_for_status().json()["id"]
            http.post(f"/api/v1/groups/id/{group_id}/users/add", json={"user_ids": [me]}).raise_for_status()
    missing = set(WAYS.values()) - listed
    if missing:
        raise SystemExit(f"Open WebUI does not list {sorted(missing)} (it lists {sorted(listed)})")


# ------------------------------------------------------------------------------ one chat


@dataclass
class Reading:
    """An answer as it arrives: the one place that says what the first and last token are."""

    start: float = field(default_factory=time.perf_counter)
    parts: list[str] = field(default_factory=list)
    first: float = 0.0
    last: float = 0.0

    def text(self, piece: str) -> None:
        if piece:
            self.last = time.perf_counter() - self.start
            self.first = self.first or self.last
            self.parts.append(piece)

    def answer(self) -> Answer:
        return self.first, self.last, "".join(self.parts), len(self.parts), self.start


async def api_chat(client: httpx.AsyncClient, model: str) -> Answer:
    """One streaming chat completion, read from the response as an API client does."""
    body = {"model": model, "messages": MESSAGES, "stream": True}
    reading = Reading()
    async with client.stream("POST", "/api/chat/completions", json=body) as response:
        if response.status_code != 200:
            raise RuntimeError(f"{model}: HTTP {response.status_code} {(await response.aread())[:300]!r}")
        async for line in response.aiter_lines():
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            try:
                choices = json.loads(line[5:]).get("choices") or [{}]
            except ValueError:
                continue
            reading.text((choices[0].get("delta") or {}).get("content") or "")
    return reading.answer()


@dataclass
class _Pending(Reading):
    """A browser chat's answer while its socket events come in, until Open WebUI says it is done."""

    error: str = ""
    done: asyncio.Event = field(default_factory=asyncio.Event)


class BrowserChats:
    """Chats as Open WebUI's page sends them, each answer read from the socket events of its message.

    One socket.io connection, signed in as the admin (a JWT: Open WebUI's socket takes no API key),
    carries the events of every chat; each is told apart by its message id.
    """

    def __init__(self, client: httpx.AsyncClient, socket: Any) -> None:
        self._client = client
        self._socket = socket
        self._pending: dict[str, _Pending] = {}
        socket.on("events", self._on_event)

    @classmethod
    async def connect(cls, client: httpx.AsyncClient, url: str, jwt: str) -> BrowserChats:
        import socketio  # the bench extra; main() checks for it before it starts anything

        socket = socketio.AsyncClient()
        chats = cls(client, socket)
        await socket.connect(
            url, socketio_path="/ws/socket.io", transports=["websocket"], auth={"token": jwt}, wait_timeout=30
        )
        return chats

    async def close(self) -> None:
        await self._socket.disconnect()

    async def _on_event(self, event: dict[str, Any]) -> None:
        pending = self._pending.get(event.get("message_id") or "")
        if pending is None:
            return
        envelope = event.get("data") or {}
        kind, data = envelope.get("type"), envelope.get("data") or {}
        if kind == "response:completion" and data.get("type") == "response.output_text.delta":
            pending.text(data.get("delta") or "")
        elif kind == "chat:completion" and data.get("choices"):
            pending.text((data["choices"][0].get("delta") or {}).get("content") or "")
        elif kind in ("chat:message:error", "chat:tasks:cancel") or (kind == "chat:completion" and data.get("error")):
            pending.error = f"{kind}: {str(data.get('error') or data)[:300]}"
            pending.done.set()
        if kind == "chat:completion" and data.get("done"):
            pending.done.set()

    async def ask(self, model: str) -> Answer:
        message_id, now = str(uuid.uuid4()), int(time.time())
        user_message: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "parentId": None,
            "childrenIds": [],
            "role": "user",
            "content": MESSAGES[-1]["content"],
            "timestamp": now,
        }
        body = {
            "model": model,
            "messages": MESSAGES,
            "stream": True,
            "parent_id": None,
            "id": message_id,
            "session_id": self._socket.get_sid(),
            "user_message": user_message,
        }
        pending = self._pending[message_id] = _Pending()
        try:
            response = await self._client.post("/api/chat/completions", json=body)
            if response.status_code != 200:
                raise RuntimeError(f"{model}: HTTP {response.status_code} {response.text[:300]!r}")
            if not response.json().get("task_ids"):  # answered in the response, not as socket events
                raise RuntimeError(f"{model}: Open WebUI started no background task: {response.text[:300]!r}")
            await asyncio.wait_for(pending.done.wait(), 300)
        finally:
            del self._pending[message_id]
        if pending.error:
            raise RuntimeError(f"{model}: {pending.error}")
        return pending.answer()


def check_answer(way: str, text: str, turn: Turn) -> None:
    """Refuse figures for a way that did not stream the whole turn."""
    wanted = [f"lead{turn.tokens - 1} ", f"sum{turn.tokens - 1} "]
    if turn.tool_call and way != BASELINE:
        wanted.append("get_weather")  # the pipe renders the tool call; the connection passes raw deltas
    if not all(w in text for w in wanted) or "Agent error" in text:
        raise SystemExit(f"{way} did not stream the whole turn: {text[:400]!r}")


# ------------------------------------------------------------------------------ the process


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def sockets(pid: int, backend_port: int) -> tuple[int, int]:
    """(socket fds of the process, its established TCP connections to the backend)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    to_backend = 0
    for table in ("tcp", "tcp6"):
        try:
            rows = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if cols[3] == "01" and cols[9] in inodes and int(cols[2].rsplit(":", 1)[1], 16) == backend_port:
                to_backend += 1
    return len(inodes), to_backend


# ------------------------------------------------------------------------------ the runs


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def concurrency_run(
    ask: Ask, backend: httpx.AsyncClient, pid: int, concurrency: int, rounds: int, turn: Turn
) -> dict[str, Any]:
    ways = list(WAYS)
    # one chat at a time: where each chat's first token spent its time, from the backend's timeline
    phases: dict[str, dict[str, list[float]]] = {w: {p: [] for p in PHASES} for w in ways if w != "pipe-floor"}
    first: dict[str, list[float]] = {w: [] for w in ways}
    last: dict[str, list[float]] = {w: [] for w in ways}
    cpu = dict.fromkeys(ways, 0.0)
    errors: dict[str, list[str]] = {w: [] for w in ways}
    chunks: dict[str, list[int]] = {w: [] for w in ways}
    await backend.get("/timeline")  # drops the entries of earlier answers
    for r in range(rounds):
        # Rotated, so each way is first as often; the cyclic order stays, so whatever Open WebUI
        # still does for a way's chats after their last token (a browser chat's outlet filters
        # and saving it) falls into the next way's window, always the same one.
        for way in ways[r % len(ways) :] + ways[: r % len(ways)]:
            before = cpu_seconds(pid)
            results = await asyncio.gather(*(ask(WAYS[way]) for _ in range(concurrency)), return_exceptions=True)
            cpu[way] += cpu_seconds(pid) - before
            for result in results:
                if isinstance(result, BaseException):
                    errors[way].append(f"{type(result).__name__}: {result}"[:200])
                    continue
                f, last_token, text, n, _ = result
                check_answer(way, text, turn)
                chunks[way].append(n)
                first[way].append(f)
                last[way].append(last_token)
            if concurrency == 1:
                timeline = (await backend.get("/timeline")).json()["timeline"]
                [result] = results
                if way in phases and not isinstance(result, BaseException):
                    f, _, _, _, start = result
                    ((received, first_token),) = timeline
                    for phase, seconds in zip(
                        PHASES,
                        (received - start, first_token - received, start + f - first_token),
                        strict=True,
                    ):
                        phases[way][phase].append(seconds)
    chats = rounds * concurrency
    out: dict[str, Any] = {"concurrency": concurrency, "chats_per_way": chats, "ways": {}}
    for way in ways:
        out["ways"][way] = {
            "first_ms": round(statistics.median(first[way]) * 1000, 2),
            "first_p90_ms": round(quantile(first[way], 0.9) * 1000, 2),
            "last_ms": round(statistics.median(last[way]) * 1000, 2),
            "last_p90_ms": round(quantile(last[way], 0.9) * 1000, 2),
            "cpu_ms_per_chat": round(cpu[way] / chats * 1000, 2),
            "chunks_per_chat": round(statistics.mean(chunks[way]), 1) if chunks[way] else 0,
            "errors": len(errors[way]),
            "first_errors": sorted(set(errors[way]))[:3],
        }
        if concurrency == 1 and way in phases and phases[way]["agent"]:
            out["ways"][way]["first_token_phases_ms"] = {
                phase: round(statistics.median(values) * 1000, 2) for phase, values in phases[way].items()
            }
        if concurrency == 1 and way in ("pipe-openai", "pipe-agui") and not errors[way] + errors[RELAY]:
            # the same round's chat of the minimal relay pipe: what the agent pipe adds, drift paired away
            out["ways"][way]["first_minus_minimal_ms"] = paired_difference(first[way], first[RELAY])
    anon = IDENTITY_WAY[0]
    if concurrency == 1 and anon in first and not errors["pipe-agui"] + errors[anon]:
        # the same round's chat for an agent without identity: what the groups read and two tokens cost
        out["ways"]["pipe-agui"]["first_minus_anon_ms"] = paired_difference(first["pipe-agui"], first[anon])
    base = out["ways"][BASELINE]
    for way in ways:
        row = out["ways"][way]
        row["first_ratio"] = round(row["first_ms"] / base["first_ms"], 3)
        row["last_ratio"] = round(row["last_ms"] / base["last_ms"], 3)
        row["first_ratio_95"] = ratio_interval(first[way], first[BASELINE])
        row["last_ratio_95"] = ratio_interval(last[way], last[BASELINE])
    return out


def paired_difference(values: list[float], reference: list[float], resamples: int = 2000) -> list[float]:
    """Median of values[i] - reference[i] in ms, with a 95% bootstrap interval over the pairs."""
    differences = [(v - r) * 1000 for v, r in zip(values, reference, strict=True)]
    pick = random.Random(0).choices
    medians = sorted(statistics.median(pick(differences, k=len(differences))) for _ in range(resamples))
    return [
        round(statistics.median(differences), 2),
        round(medians[int(0.025 * resamples)], 2),
        round(medians[int(0.975 * resamples) - 1], 2),
    ]


def ratio_interval(values: list[float], baseline: list[float], resamples: int = 2000) -> list[float]:
    """A 95% bootstrap interval of median(values) / median(baseline): how far the ratio could be from
    the one measured on these chats alone. Chats are resampled one by one, so it leaves out what all
    ways share (the machine's drift, which the interleaving spreads over them alike)."""
    if not values or not baseline:
        return [float("nan"), float("nan")]
    pick = random.Random(0).choices
    ratios = sorted(
        statistics.median(pick(values, k=len(values))) / statistics.median(pick(baseline, k=len(baseline)))
        for _ in range(resamples)
    )
    return [round(ratios[int(0.025 * resamples)], 3), round(ratios[int(0.975 * resamples) - 1], 3)]


async def in_a_row(ask: Ask, pid: int, backend_port: int, way: str, count: int, turn: Turn) -> dict[str, Any]:
    for _ in range(max(20, count // 10)):  # warm-up: caches, pools
        await ask(WAYS[way])
    samples = []
    step = max(1, count // 10)
    for i in range(count + 1):
        if i % step == 0:
            fds, to_backend = sockets(pid, backend_port)
            samples.append({"chats": i, "rss_mb": round(rss_mb(pid), 1), "socket_fds": fds, "to_backend": to_backend})
        if i < count:
            _, _, text, _, _ = await ask(WAYS[way])
            if i == 0:
                check_answer(way, text, turn)
    return {"way": way, "chats": count, "samples": samples}


def print_concurrency(run: dict[str, Any]) -> None:
    print(f"\n{run['concurrency']} chat(s) at a time, {run['chats_per_way']} chats per way:")
    print(
        f"  {'way':<18} {'first ms':>9} {'(p90)':>8} {'ratio [95%]':>17}   {'last ms':>9} {'(p90)':>8}"
        f" {'ratio [95%]':>17}   {'OWUI CPU ms/chat':>16} {'chunks/chat':>11}"
    )

    def ratio(value: float, interval: list[float]) -> str:
        return f"{value:.2f} [{interval[0]:.2f}-{interval[1]:.2f}]"

    for way, r in run["ways"].items():
        print(
            f"  {way:<18} {r['first_ms']:9.1f} {r['first_p90_ms']:8.1f} {ratio(r['first_ratio'], r['first_ratio_95']):>17}   "
            f"{r['last_ms']:9.1f} {r['last_p90_ms']:8.1f} {ratio(r['last_ratio'], r['last_ratio_95']):>17}   "
            f"{r['cpu_ms_per_chat']:16.1f} {r['chunks_per_chat']:11.1f}"
            + (f"   {r['errors']} failed: {r['first_errors']}" if r["errors"] else "")
        )
    paired = {way: r["first_minus_minimal_ms"] for way, r in run["ways"].items() if "first_minus_minimal_ms" in r}
    if paired:
        print(
            "  first token minus the minimal relay pipe's in the same round, median ms [95%]: "
            + "; ".join(f"{way} {d[0]:+.2f} [{d[1]:+.2f} to {d[2]:+.2f}]" for way, d in paired.items())
        )
    if "first_minus_anon_ms" in run["ways"].get("pipe-agui", {}):
        d = run["ways"]["pipe-agui"]["first_minus_anon_ms"]
        print(
            f"  identity's cost: pipe-agui minus pipe-agui-anon in the same round, median ms [95%]: "
            f"{d[0]:+.2f} [{d[1]:+.2f} to {d[2]:+.2f}]"
        )
    phased = {way: r["first_token_phases_ms"] for way, r in run["ways"].items() if "first_token_phases_ms" in r}
    if phased:
        print(f"  first token in parts, medians in ms: {' / '.join(PHASES)}")
        for way, parts in phased.items():
            print(f"  {way:<18} " + " / ".join(f"{parts[p]:.2f}" for p in PHASES))


def print_in_a_row(run: dict[str, Any]) -> None:
    print(f"\n{run['chats']} chats in a row, {run['way']}:  chats / RSS MB / socket fds / connections to the backend")
    print(
        "  " + "  ".join(f"{s['chats']}:{s['rss_mb']:.0f}/{s['socket_fds']}/{s['to_backend']}" for s in run["samples"])
    )


async def run_all(
    args: argparse.Namespace, url: str, token: str, pid: int, backend_port: int, turn: Turn
) -> dict[str, Any]:
    """``token``: the admin's API key (--via api) or session JWT (--via browser, which the socket needs)."""
    # keep-alive shorter than uvicorn's 5 s, so the client never reuses a connection the server is closing
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=100, keepalive_expiry=2.0)
    headers = {"Authorization": f"Bearer {token}"}
    figures: dict[str, Any] = {"concurrency": [], "in_a_row": []}
    async with (
        httpx.AsyncClient(base_url=url, headers=headers, timeout=300, limits=limits, trust_env=False) as client,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{backend_port}", timeout=60, trust_env=False) as backend,
    ):
        browser = await BrowserChats.connect(client, url, token) if args.via == "browser" else None
        ask: Ask = browser.ask if browser else functools.partial(api_chat, client)
        try:
            for way in WAYS:  # warm-up, and proof that each way streams the whole turn
                for _ in range(3):
                    check_answer(way, (await ask(WAYS[way]))[2], turn)
            for concurrency in args.concurrency:
                rounds = max(args.rounds, -(-args.min_chats // concurrency))
                run = await concurrency_run(ask, backend, pid, concurrency, rounds, turn)
                figures["concurrency"].append(run)
                print_concurrency(run)
            if args.in_a_row:
                for way in ROW_WAYS:
                    run = await in_a_row(ask, pid, backend_port, way, args.in_a_row, turn)
                    figures["in_a_row"].append(run)
                    print_in_a_row(run)
        finally:
            if browser:
                await browser.close()
    return figures


def identity_environment() -> dict[str, str]:
    """Open WebUI's user forwarding with a JWT secret, and the pipe's EdDSA key, for --identity
    (throwaway values for a throwaway instance)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    pem = (
        Ed25519PrivateKey.generate()
        .private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        .decode()
    )
    return {
        "ENABLE_FORWARD_USER_INFO_HEADERS": "true",
        "FORWARD_USER_INFO_HEADER_JWT_SECRET": uuid.uuid4().hex * 2,
        "AIHUB_IDENTITY_PRIVATE_KEY": pem,
        "AIHUB_IDENTITY_KEY_ID": "bench",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, nargs="*", default=[1, 10, 50], help="chats at a time")
    parser.add_argument("--rounds", type=int, default=10, help="waves per way and concurrency, interleaved")
    parser.add_argument("--min-chats", type=int, default=100, help="at least this many chats per way and concurrency")
    parser.add_argument("--rate", type=float, default=200, help="backend tokens per second per stream")
    parser.add_argument("--tokens", type=int, default=40, help="text tokens before and after the tool call")
    parser.add_argument(
        "--think-ms",
        type=float,
        default=0,
        help="the agent waits this long before its first token, as an LLM does (default 0: "
        "one token's time); not in the chats in a row",
    )
    parser.add_argument(
        "--via",
        choices=("api", "browser"),
        default="api",
        help="read answers from the streaming response (api) or, as Open WebUI's page, from its socket (browser)",
    )
    parser.add_argument(
        "--in-a-row",
        type=int,
        default=None,
        help="chats one after another per way (0: skip; default 1000 --via api, 0 --via browser, "
        "where every chat adds a chat to the database)",
    )
    parser.add_argument("--in-a-row-rate", type=float, default=0, help="backend token rate for those (0: at once)")
    parser.add_argument(
        "--topology",
        choices=("single", "ha"),
        default="single",
        help="single: one Open WebUI on SQLite; ha: scripts/openwebui-local's PostgreSQL + Redis + "
        "two replicas, every chat on the first replica (whose CPU is measured)",
    )
    parser.add_argument(
        "--identity",
        action="store_true",
        help="Open WebUI forwards the user with an HS256 JWT, the pipe also signs an EdDSA token, the "
        "admin is in two groups; adds pipe-agui-anon (identity: none)",
    )
    parser.add_argument("--name", default=f"bench-chat-{os.getpid()}", help="openwebui-local instance name")
    parser.add_argument("--keep", action="store_true", help="keep the instance running afterwards")
    parser.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    if args.via == "browser" and importlib.util.find_spec("socketio") is None:
        parser.error("--via browser needs python-socketio: .venv/bin/pip install -e '.[bench]'")
    if args.in_a_row is None:
        args.in_a_row = 1000 if args.via == "api" else 0
    turn = Turn(args.tokens, tool_call=args.via == "api", think_ms=args.think_ms)

    from tests.support.owui_instance import throwaway_instance

    extra_env: dict[str, str] = {}
    if args.identity:
        WAYS[IDENTITY_WAY[0]] = IDENTITY_WAY[1]
        extra_env = identity_environment()

    figures: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, "cpus": os.cpu_count()}
    backends: list[subprocess.Popen[str]] = []
    try:
        topology = None if args.topology == "single" else args.topology
        with throwaway_instance(args.name, keep=args.keep, topology=topology, extra_env=extra_env) as owui:
            pid = int(owui.status()["pid"])
            if args.via == "browser" and not owui.admin_jwt:
                raise SystemExit("--via browser: the instance's state has no admin session (JWT) for the socket")
            token = (owui.admin_jwt if args.via == "browser" else owui.token) or ""
            print(
                f"Open WebUI pid {pid} at {owui.url} ({args.topology}), via {args.via}"
                f"{', the user forwarded and signed (--identity)' if args.identity else ''}; {2 * args.tokens} text tokens"
                f"{' and one tool call' if turn.tool_call else ''} per turn"
                f"{f', the first after {turn.think_ms:g} ms' if turn.think_ms else ''}; "
                f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
            )
            runs = [(args.rate, args.concurrency, 0, turn)]
            if args.in_a_row:
                runs.append((args.in_a_row_rate, [], args.in_a_row, dataclasses.replace(turn, think_ms=0)))
            figures["concurrency"], figures["in_a_row"], figures["backend_stats"] = [], [], []
            for rate, concurrency, row, run_turn in runs:
                proc, backend_url = start_backend(rate, run_turn)
                backends.append(proc)
                with owui.client(timeout=60) as http:
                    configure(http, backend_url, rate, run_turn)
                print(f"\nbackend {backend_url}: {rate:g} tokens/s per stream (0: no pause)")
                plan = argparse.Namespace(**{**vars(args), "concurrency": concurrency, "in_a_row": row})
                backend_port = int(backend_url.rsplit(":", 1)[1])
                done = asyncio.run(run_all(plan, owui.url, token, pid, backend_port, run_turn))
                figures["concurrency"] += done["concurrency"]
                figures["in_a_row"] += done["in_a_row"]
                with httpx.Client(trust_env=False) as plain:
                    stats = plain.get(f"{backend_url}/stats").json()
                figures["backend_stats"].append(stats)
                print(f"backend: {stats}")
            figures["load_after"] = os.getloadavg()[0]
    finally:
        for proc in backends:
            proc.terminate()
    print(f"load after {figures['load_after']:.1f}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
