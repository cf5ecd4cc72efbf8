"""What every scripted framework server shares: the test endpoints and the loopback start.

Imported by the framework apps beside it, inside each framework's own venv (it needs only
fastapi and uvicorn, which every AG-UI server there brings). The framework's own AG-UI
endpoint is mounted by the app; this module adds:
- ``GET /_recorded``: every request body the AG-UI endpoint received, oldest first; ``DELETE``
  clears it, the model calls and the tools' side effects;
- ``GET /_model_calls``: what the scripted model was given, per call (the app fills it);
- ``GET /_effects``: what the side-effecting tools really did (e.g. a booking);
- ``GET /_health``: the installed versions of the packages the app names.

``serve(app)`` binds 127.0.0.1 on a free port, prints ``PORT <n>`` and serves until it is
terminated or its parent process goes away.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import socket
from typing import Any

import uvicorn
from fastapi import FastAPI

RECORDED: list[dict[str, Any]] = []
MODEL_CALLS: list[Any] = []
EFFECTS: list[str] = []

SCENARIO_PREFIX = "scenario:"


def scenario_of(text: str, default: str = "stream") -> str:
    """The scenario a user's message names (``scenario:<name>``, anywhere in the text)."""
    at = text.find(SCENARIO_PREFIX)
    if at < 0:
        return default
    return text[at + len(SCENARIO_PREFIX) :].split()[0].strip() if text[at + len(SCENARIO_PREFIX) :].strip() else default


def words(text: str) -> list[str]:
    """Word-sized deltas, so a stream has several text events."""
    parts = text.split(" ")
    return [part if i == 0 else " " + part for i, part in enumerate(parts)]


def add_test_routes(app: FastAPI, agui_path: str, packages: tuple[str, ...]) -> None:
    """Record every body POSTed to ``agui_path`` and serve the test endpoints."""

    @app.middleware("http")
    async def record(request: Any, call_next: Any) -> Any:
        if request.method == "POST" and request.url.path == agui_path:
            body = await request.body()
            try:
                RECORDED.append(json.loads(body))
            except ValueError:
                RECORDED.append({"unparsed": body.decode(errors="replace")})
        return await call_next(request)

    @app.get("/_recorded")
    async def recorded() -> list[dict[str, Any]]:
        return RECORDED

    @app.delete("/_recorded")
    async def clear() -> dict[str, int]:
        count = len(RECORDED)
        RECORDED.clear()
        MODEL_CALLS.clear()
        EFFECTS.clear()
        return {"cleared": count}

    @app.get("/_model_calls")
    async def model_calls() -> list[Any]:
        return MODEL_CALLS

    @app.get("/_effects")
    async def effects() -> list[str]:
        return EFFECTS

    @app.get("/_health")
    async def health() -> dict[str, str]:
        return {name: importlib.metadata.version(name) for name in packages}


async def _watch_parent(server: uvicorn.Server, parent: int) -> None:
    """Stop when the process that started us is gone, so a crashed test run leaves nothing behind."""
    while not server.should_exit:
        if os.getppid() != parent:
            server.should_exit = True
        await asyncio.sleep(0.5)


async def _serve(app: Any) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(os.environ.get("AIHUB_FRAMEWORK_PORT", "0"))))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    watcher = asyncio.create_task(_watch_parent(server, os.getppid()))
    await server.serve(sockets=[sock])
    watcher.cancel()


def serve(app: Any) -> None:
    asyncio.run(_serve(app))
