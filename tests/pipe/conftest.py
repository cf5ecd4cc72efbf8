"""Fixtures for the agent pipe tests: a real AG-UI server per Agent Framework version, an SSE stub."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from pipe_support import SSEStub, harness


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
        reason = f"AG-UI server {version} unavailable: {exc}"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    yield server
    server.stop()


@pytest.fixture
def sse_stub() -> Iterator[SSEStub]:
    stub = SSEStub()
    yield stub
    stub.close()
