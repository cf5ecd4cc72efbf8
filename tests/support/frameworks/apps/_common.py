"""What every framework app shares: the scripts, the recording, the control routes, the port.

Imported by the app files (``apps/<name>_app.py``), inside the framework's venv: it needs only
Starlette and uvicorn, which every framework's AG-UI server brings. The app turns a script's steps
into its framework's own model output, and the framework's messages into ``seen`` records.

The script is chosen by the last user message: ``scenario:<name>`` anywhere in it (else
``stream``). The model's step is the number of tool results after that message, so the
framework's own tool loop drives the rounds, as with a real model.

Control routes: ``GET /_health`` (versions), ``GET|DELETE /_recorded`` (every request body the
AG-UI route got), ``GET /_arrived`` (how many requests came in, counted before their body is read),
``GET /_model_calls`` (what the model was given, per call), ``GET /_ran`` (tool bodies that really
ran), ``GET /_reached`` (what a tool's own code read of the run: the ids, the signed identity; the
app's REACHES says how, docs/agent-frameworks.md shows it).

The records are of the runs whose request came in after the last DELETE: the tests share one
server per framework for the session, and a run can go on after its client left (a probe the pipe
hung up on, a run cancelled mid-stream), so what it records later must not reach the next test's.
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import hashlib
import importlib.metadata
import json
import os
import re
import socket
import sys
import uuid
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse

RECORDED: list[Any] = []
MODEL_CALLS: list[list[dict[str, Any]]] = []
RAN: list[dict[str, Any]] = []
REACHED: list[dict[str, Any]] = []
# Each DELETE /_recorded starts a new epoch; a request belongs to the epoch it came in during, and
# its context carries it into the tasks and threads its run uses (asyncio tasks and anyio's and
# asyncio's to_thread copy the context). Code outside any request's context counts as current.
EPOCH = [0]
ARRIVED = [0]  # requests to the AG-UI route so far, counted as they come in (before their body)
_REQUEST_EPOCH: contextvars.ContextVar[int | None] = contextvars.ContextVar("request_epoch", default=None)
IDENTITY_HEADER = "X-AIHub-Identity"  # the pipe's signed identity (docs/agent-contract.md)

ORDER = "10023"
QUESTION = "Which address should the parcel go to?"
# Streamed arguments: the first piece comes with the call's name and id (as OpenAI's stream does).
ORDER_ARGS = ['{"ord', 'er": "100', '23"}']


@dataclass
class Call:
    name: str
    pieces: list[str]
    id: str = field(default_factory=lambda: f"call_{uuid.uuid4().hex[:12]}")

    @property
    def args(self) -> dict[str, Any]:
        return json.loads("".join(self.pieces))


@dataclass
class Step:
    """One model response: text pieces, then calls; or a failure; and the usage it reports."""

    text: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    fail: str | None = None
    usage: tuple[int, int] = (0, 0)


def _scripts(last_result: str) -> dict[str, list[Step]]:
    lookup = lambda: Call("lookup_order", list(ORDER_ARGS))  # noqa: E731 (a one-line script step)
    return {
        "stream": [Step(["Hello", " from the", " scripted", " agent."], usage=(12, 5))],
        "tool": [
            Step(["Let me look up ", "order 10023."], [lookup()], usage=(20, 8)),
            Step(["Order 10023 ", "has shipped."], usage=(40, 6)),
        ],
        "approve": [
            Step(["I will cancel order 10023."], [Call("cancel_order", list(ORDER_ARGS))], usage=(20, 8)),
            Step([f"The cancel tool said: {last_result}"], usage=(40, 6)),
        ],
        "ask": [
            Step(["I need to ask you something."], [Call("ask_address", ['{"order": ', '"10023"}'])], usage=(20, 8)),
            Step([f"You answered: {last_result}"], usage=(40, 6)),
        ],
        "client": [
            Step(["Please confirm the shipment."], [Call("confirm_shipment", list(ORDER_ARGS))], usage=(20, 8)),
            Step([f"The client answered: {last_result}"], usage=(40, 6)),
        ],
        "tool_error": [
            Step(["Trying the broken tool."], [Call("broken_lookup", list(ORDER_ARGS))], usage=(20, 8)),
            Step(["The tool failed."], usage=(40, 6)),
        ],
        "model_error": [Step(["Starting to answer."], fail="the scripted model failed mid-answer")],
        "files": [Step(["I have read your attachments."], usage=(30, 6))],
        # a tool that takes no arguments: a model sends "{}" whole with the call's name and id
        "no_args": [
            Step(["Let me check ", "the time."], [Call("current_time", ["{}"])], usage=(20, 8)),
            Step(["It is ", "noon."], usage=(40, 6)),
        ],
    }


SCENARIO = re.compile(r"scenario:([a-z_]+)")


def step_for(seen_messages: list[dict[str, Any]]) -> Step:
    """The step of the script the last user message chose, from the messages the model got."""
    last_user = max((i for i, m in enumerate(seen_messages) if m["role"] == "user"), default=-1)
    after = seen_messages[last_user + 1 :]
    results = [r for m in after for r in m.get("results", [])]
    text = seen_messages[last_user]["text"] if last_user >= 0 else ""
    match = SCENARIO.search(text)
    name = match.group(1) if match else "stream"
    last = results[-1][1] if results else ""
    script = _scripts(str(last)).get(name) or _scripts("")["stream"]
    return script[min(len(results), len(script) - 1)] if len(results) < len(script) else Step(["(script done)"])


def _keep(records: list[Any], item: Any) -> None:
    """Record ``item`` unless the request whose run made it came in before the last clear."""
    if _REQUEST_EPOCH.get() in (None, EPOCH[0]):
        records.append(item)


def keep_model_call(seen_messages: list[dict[str, Any]]) -> None:
    """Keep what the model was given (for an app that picks the step itself)."""
    _keep(MODEL_CALLS, seen_messages)


def record_model_call(seen_messages: list[dict[str, Any]]) -> Step:
    """Keep what the model was given, and say what it answers."""
    keep_model_call(seen_messages)
    return step_for(seen_messages)


def seen(
    role: str,
    text: str = "",
    calls: list[str] | None = None,
    results: list[tuple[str, Any]] | None = None,
    media: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """One message as the model got it: ``results`` are (call id, content) pairs, ``media`` the
    framework's own kind of each attachment with its media type and the sha256 of its bytes."""
    return {
        "role": role,
        "text": text,
        "calls": calls or [],
        "results": [list(r) for r in results or []],
        "media": media or [],
    }


def media(kind: str, mime: str, data: bytes | str) -> dict[str, str]:
    raw = base64.b64decode(data) if isinstance(data, str) else data
    return {"type": kind, "media_type": mime, "sha256": hashlib.sha256(raw).hexdigest()}


def ran(name: str, args: dict[str, Any]) -> None:
    _keep(RAN, {"name": name, "args": args})


def reached(**seen: Any) -> None:
    """What a tool's own code read of its run (thread id, user, identity), for test_framework_reaches."""
    _keep(REACHED, seen)


# --- the recording middleware and the control routes ------------------------------------------------


class RecordBodies:
    """ASGI middleware: keep the JSON body of every POST to the AG-UI route, then pass it on whole."""

    def __init__(self, app: Any, path: str) -> None:
        self.app, self.path = app, path

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        _REQUEST_EPOCH.set(EPOCH[0])  # on arrival: a clear() while its body comes in is after it
        ARRIVED[0] += 1
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            _keep(RECORDED, json.loads(body))
        except ValueError:
            _keep(RECORDED, {"unparsed": body.decode("utf-8", "replace")})
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def add_control_routes(app: Any, packages: list[str]) -> None:
    """The routes the harness reads (Starlette or FastAPI ``app``)."""

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({p: importlib.metadata.version(p) for p in packages})

    async def recorded(request: Request) -> JSONResponse:
        if request.method == "DELETE":
            EPOCH[0] += 1
            RECORDED.clear()
            MODEL_CALLS.clear()
            RAN.clear()
            REACHED.clear()
        return JSONResponse(RECORDED)

    async def arrived(request: Request) -> JSONResponse:
        return JSONResponse(ARRIVED[0])

    async def model_calls(request: Request) -> JSONResponse:
        return JSONResponse(MODEL_CALLS)

    async def ran_tools(request: Request) -> JSONResponse:
        return JSONResponse(RAN)

    async def reached_tools(request: Request) -> JSONResponse:
        return JSONResponse(REACHED)

    app.add_route("/_health", health, methods=["GET"])
    app.add_route("/_recorded", recorded, methods=["GET", "DELETE"])
    app.add_route("/_arrived", arrived, methods=["GET"])
    app.add_route("/_model_calls", model_calls, methods=["GET"])
    app.add_route("/_ran", ran_tools, methods=["GET"])
    app.add_route("/_reached", reached_tools, methods=["GET"])


async def _watch_parent(server: uvicorn.Server, parent: int) -> None:
    """Stop when the process that started us is gone, so a crashed test run leaves nothing behind."""
    while not server.should_exit:
        if os.getppid() != parent:
            server.should_exit = True
        await asyncio.sleep(0.5)


def serve(app: Any, agent_path: str, packages: list[str]) -> None:
    """Add the control routes and the recorder, bind a free loopback port, print ``PORT n``, serve."""
    add_control_routes(app, packages)

    async def main() -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        config = uvicorn.Config(RecordBodies(app, agent_path), log_level="warning", lifespan="auto")
        server = uvicorn.Server(config)
        print(f"PORT {sock.getsockname()[1]}", flush=True)
        watcher = asyncio.create_task(_watch_parent(server, os.getppid()))
        await server.serve(sockets=[sock])
        watcher.cancel()

    sys.exit(asyncio.run(main()))
