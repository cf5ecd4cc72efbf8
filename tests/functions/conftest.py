"""Fixtures for the agent pipe tests: a real AG-UI server per Agent Framework version, an SSE stub."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.agui_server import harness
from tests.support.frameworks import harness as frameworks
from tests.support.owui_instance import unavailable
from tests.support.pipe_support import SSEStub, pipe_module


@pytest.fixture(scope="session", params=harness.VERSIONS)
def agui_server(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The scripted Agent Framework AG-UI server, once per version, for the whole session.

    When the venv cannot be built or the server does not start, the test fails under CI and is
    skipped elsewhere, with the reason.
    """
    version = request.param
    try:
        server = harness.AguiServer(version).start()
    except Exception as exc:  # HarnessError, or pip/venv trouble surfacing as OSError
        unavailable(f"AG-UI server {version} unavailable: {exc}")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def framework_servers() -> Iterator[Any]:
    """The frameworks' own AG-UI servers (tests/support/frameworks/), each started on first use
    and kept for the session: tests.support.frameworks.testing.started(pool, name) gives one."""
    pool = frameworks.ServerPool()
    yield pool
    pool.close()


@pytest.fixture
def sse_stub() -> Iterator[SSEStub]:
    stub = SSEStub()
    yield stub
    stub.close()


@pytest.fixture
def stored_images(monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[str, bytes]]]:
    """Open WebUI's file store, faked: the images (mime, bytes) the pipe asked it to store, per call."""
    calls: list[list[tuple[str, bytes]]] = []

    async def store(images: Any, request: Any, user: Any, metadata: Any) -> list[str]:
        calls.append(list(images))
        return [f"/api/v1/files/f{n}/content" for n in range(len(images))]

    monkeypatch.setattr(pipe_module, "store_images", store)
    return calls
