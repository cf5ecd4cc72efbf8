"""The pytest side of the framework servers: a running server or a loud failure."""

from __future__ import annotations

from tests.support.frameworks import harness
from tests.support.owui_instance import unavailable


def started(pool: harness.ServerPool, name: str) -> harness.FrameworkServer:
    """``name``'s running server, its recordings cleared; fails under CI (skips elsewhere, with
    the reason) when its venv cannot be built or it does not start."""
    try:
        server = pool.get(name)
    except harness.HarnessError as exc:
        unavailable(f"{name} AG-UI server unavailable: {exc}")
    server.clear()
    return server
